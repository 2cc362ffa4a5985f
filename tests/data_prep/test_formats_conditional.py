"""Conditional media in and out (issue 55 part 2, data_prep/formats/conditional.py): ms-swift rows whose
``rejected_videos`` / ``rejected_audios`` differ from the chosen side's are the same response under other media
— CAVPref's visual / audio anchor pairs. The foreign fixtures follow ms-swift's DPO example (``"images":
["cat.png"], "rejected_images": ["dog.png"]``, the chosen answer and no ``rejected_response``) with videos and
audios; written here, not copied."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from datasets import Dataset, load_from_disk

from cavpref import task_registry
from cavpref.bench.rows import examples, write_clips
from cavpref.data import AnchorPair
from cavpref.data_prep.formats import ExportArgs, ImportArgs, export_dataset, import_dataset
from cavpref.data_prep.formats.conditional import TASKS
from cavpref.data_prep.readers import ReaderError
from cavpref.media.spec import Combine, Source, from_json, mute, to_json

pytestmark = pytest.mark.usefixtures("one_thread")
Q = "<video><audio>Which instrument is playing?"


@pytest.fixture(autouse=True)
def forget_conditional_tasks():
    """The conditional tasks are declared by an import (and by training from its manifest): not left behind
    for other tests of the process."""
    yield
    for name in TASKS:
        task_registry.forget_task(name)


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    root = tmp_path_factory.mktemp("cond_media")
    write_clips(root)
    return root


def msg(prompt: str, answer: str) -> list[dict]:
    return [{"role": "user", "content": prompt}, {"role": "assistant", "content": answer}]


def foreign_file(media: Path, rows: list[dict], name: str = "swift_cond.jsonl") -> Path:
    path = media / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def foreign_rows(media: Path) -> list[dict]:
    a, b, c = (str(media / n) for n in ("a.mp4", "b.mp4", "c.mp4"))
    clip_a = {"videos": [a], "audios": [a]}
    return [
        {"messages": msg(Q, "A violin."), "rejected_response": "A cello.", **clip_a},  # the DPO pair
        {"messages": msg(Q, "A violin."), **clip_a, "rejected_videos": [b]},  # its visual anchor
        {"messages": msg(Q, "A violin."), **clip_a, "rejected_audios": [c]},  # its audio anchor
        # a pair and a visual anchor in one row
        {"messages": msg("<video><audio>What is shown?", "A square."), "rejected_response": "A circle.",
         "videos": [b], "audios": [b], "rejected_videos": [c]},
        # the sound removed: an explicitly empty rejected_audios, whatever use_audio_in_video
        {"messages": msg("<video><audio>Is there a sound?", "Yes, a tone."), "rejected_response": "No.",
         **clip_a, "rejected_audios": []},
    ]  # fmt: skip


def test_rejected_media_import_as_the_rows_anchor_pairs(media, tmp_path):
    f = foreign_file(media, foreign_rows(media))
    stats = import_dataset(ImportArgs(format="swift", files=[str(f)], output_dir=str(tmp_path / "o")))
    assert stats["imported"] == 3 and stats["anchor_rows"] == 2 and stats["reconcile"]
    rows = load_from_disk(str(tmp_path / "o" / "preferences"))["train"]
    a, b, c = Source("a.mp4"), Source("b.mp4"), Source("c.mp4")
    first, second, third = rows
    assert first["task"] == "CLEAN-VA" and (first["chosen"], first["rejected"]) == ("A violin.", "A cello.")
    assert from_json(first["media"]) == a
    assert (first["visual_response"], from_json(first["visual_clean"]), from_json(first["visual_perturbed"])) == (
        "A violin.", a, Combine(video=b, audio=a))  # fmt: skip
    assert (first["audio_response"], from_json(first["audio_clean"]), from_json(first["audio_perturbed"])) == (
        "A violin.", a, Combine(video=a, audio=c))  # fmt: skip
    assert second["task"] == "CLEAN-V" and second["audio_response"] is None
    assert from_json(second["visual_perturbed"]) == Combine(video=c, audio=b)
    assert third["task"] == "CLEAN-A" and from_json(third["audio_perturbed"]) == mute(a)
    manifest = json.loads((tmp_path / "o" / "manifest.json").read_text())
    assert {t: manifest["tasks"][t]["switches"] for t in TASKS} == {
        "CLEAN-V": [1, 0], "CLEAN-A": [0, 1], "CLEAN-VA": [1, 1]}  # fmt: skip
    # --conditional_task names the task of the rows given anchors
    args = ImportArgs(format="swift", files=[str(f)], output_dir=str(tmp_path / "m"), conditional_task="MVIT")
    import_dataset(args)
    assert [r["task"] for r in load_from_disk(str(tmp_path / "m" / "preferences"))["train"]] == ["MVIT"] * 3


BAD = [
    # an anchor row with no preference row of its prompt, answer and media to join
    ([{"messages": msg(Q, "A violin."), "videos": ["a.mp4"], "audios": ["a.mp4"], "rejected_videos": ["b.mp4"]}],
     "rejected_response", "a conditional row (the same response under other media) with no pair"),
    ([{"messages": msg(Q, "A violin."), "rejected_response": "A cello.", "videos": ["a.mp4"], "audios": ["a.mp4"],
       "rejected_videos": ["b.mp4"], "rejected_audios": ["c.mp4"]}],
     "rejected_audios", "both streams differ from the chosen side's"),
    ([{"messages": msg(Q, "A violin."), "rejected_response": "A cello.", "videos": ["a.mp4"], "audios": ["a.mp4"],
       "rejected_videos": ["b.mp4"]},
      {"messages": msg(Q, "A violin."), "videos": ["a.mp4"], "audios": ["a.mp4"], "rejected_videos": ["c.mp4"]}],
     "rejected_videos", "row swift:x.jsonl:1 already has a visual anchor"),
    ([{"messages": msg(Q, "A violin."), "rejected_response": "A cello.", "videos": ["a.mp4"], "audios": ["a.mp4"],
       "use_audio_in_video": "yes"}], "use_audio_in_video", "expected true, false or null"),
]  # fmt: skip


@pytest.mark.parametrize("rows,field,problem", BAD)
def test_bad_conditional_rows_name_file_record_and_field(media, tmp_path, rows, field, problem):
    good = {"messages": msg("<video>q", "y"), "rejected_response": "n", "videos": ["a.mp4"]}
    f = foreign_file(media, [good, *rows], "x.jsonl")
    with pytest.raises(ReaderError) as info:
        import_dataset(ImportArgs(format="swift", files=[str(f)], output_dir=str(tmp_path / "o")))
    err = info.value
    assert (err.file, err.index, err.field, err.problem) == (str(f), len(rows), field, problem)
    stats = import_dataset(
        ImportArgs(format="swift", files=[str(f)], output_dir=str(tmp_path / "s"), on_error="skip")
    )
    assert stats["skipped"] == {f"{field}: {problem}": 1} and stats["reconcile"]


@pytest.fixture(scope="module")
def prefs(media):
    """Every task's preference row (anchors where its switches need them), saved like a prep build."""
    rows = [e.to_row() for e in examples(1)]
    Dataset.from_list(rows).save_to_disk(str(media / "prefs"))
    return [dict(r) for r in load_from_disk(str(media / "prefs"))]


def test_anchors_export_as_ms_swift_rows_and_read_back_equal(media, prefs, tmp_path):
    out = tmp_path / "x"
    summary = export_dataset(ExportArgs(format="swift", data=str(media / "prefs"), output_dir=str(out),
                                        media_root=str(media), anchor_rows=True))  # fmt: skip
    n_anchors = sum((r["visual_response"] is not None) + (r["audio_response"] is not None) for r in prefs)
    assert summary["media"]["anchor rows (rejected_videos / rejected_audios)"] == n_anchors > 0
    lines = [json.loads(x) for x in (out / "cavpref_train.jsonl").read_text().splitlines()]
    assert len(lines) == len(prefs) + n_anchors
    mvit = next(r for r in prefs if r["task"] == "MVIT")
    i = next(k for k, r in enumerate(lines) if r.get("cavpref_id") == "MVIT-0")
    main, anchor = lines[i], lines[i + 1]
    assert main["cavpref_anchor_rows"] == ["visual"] and "cavpref_visual_response" not in main
    assert "rejected_response" in main and "rejected_response" not in anchor  # the same response, other media
    pert = common_files(from_json(mvit["visual_perturbed"]), media)
    assert anchor["messages"][1]["content"] == mvit["visual_response"]
    assert (anchor["videos"], anchor["audios"]) == common_files(from_json(mvit["visual_clean"]), media)
    assert anchor["rejected_videos"] == pert[0] and "rejected_audios" not in anchor  # the sound is A_w
    assert anchor["cavpref_anchor_of"] == "MVIT-0" and anchor["cavpref_anchor"] == "visual"
    stats = import_dataset(ImportArgs(format="swift", files=[str(out / "cavpref_train.jsonl")],
                                      output_dir=str(tmp_path / "i")))  # fmt: skip
    assert stats["imported"] == len(prefs) and stats["anchor_rows"] == n_anchors and stats["reconcile"]
    assert [dict(r) for r in load_from_disk(str(tmp_path / "i" / "preferences"))["train"]] == prefs
    # the anchors come back from the rows' files alone (whole-file media) when their MediaSpecs are gone
    whole = [r for r in prefs if r["task"] in ("MVIT", "MAIT", "MVT", "MAT")]
    ids = {r["id"] for r in whole}
    bare = [dict(r) for r in lines if (r.get("cavpref_id") or r.get("cavpref_anchor_of")) in ids]
    for r in bare:
        r.pop("cavpref_anchor_clean", None), r.pop("cavpref_anchor_perturbed", None)
    (tmp_path / "bare.jsonl").write_text("".join(json.dumps(r) + "\n" for r in bare))
    import_dataset(ImportArgs(format="swift", files=[str(tmp_path / "bare.jsonl")], data_root=str(media),
                              output_dir=str(tmp_path / "b")))  # fmt: skip
    back = {r["id"]: dict(r) for r in load_from_disk(str(tmp_path / "b" / "preferences"))["train"]}
    assert len(whole) == 4 and all(back[r["id"]] == r for r in whole)
    # a missing anchor row is an error naming the row that lists it
    kept = [r for r in lines if r.get("cavpref_anchor_of") != "MVIT-0"]
    (tmp_path / "cut.jsonl").write_text("".join(json.dumps(r) + "\n" for r in kept))
    with pytest.raises(ReaderError, match="its visual anchor row is missing"):
        import_dataset(ImportArgs(format="swift", files=[str(tmp_path / "cut.jsonl")],
                                  output_dir=str(tmp_path / "c")))  # fmt: skip


def common_files(spec, media: Path) -> tuple[list[str], list[str]]:
    from cavpref.data_prep.formats.common import spec_files

    return tuple([str((media / p).resolve()) for p in x] for x in spec_files(spec))


def test_anchor_rows_are_ms_swift_only(media):
    with pytest.raises(ValueError, match="--anchor_rows is ms-swift's layout"):
        ExportArgs(format="trl", data=str(media / "prefs"), output_dir="x", anchor_rows=True)


def test_an_imported_conditional_set_trains_with_the_v_and_a_terms(media, tmp_path):
    from cavpref.models.tiny import build_tiny_qwen_omni
    from cavpref.train import main

    f = foreign_file(media, foreign_rows(media), "train_cond.jsonl")
    import_dataset(ImportArgs(format="swift", files=[str(f)], output_dir=str(tmp_path / "imp")))
    for name in TASKS:  # training learns them from the import's manifest, not from this process
        task_registry.forget_task(name)
    model = build_tiny_qwen_omni(tmp_path / "model", hidden_size=32, num_hidden_layers=1, seed=0,
                                 extra_corpus=["Which instrument is playing? A violin. A cello."])  # fmt: skip
    recipe = {
        "method": "cavpref", "train_dataset": str(tmp_path / "imp" / "preferences"), "media_root": str(media),
        "output_dir": str(tmp_path / "run"), "per_device_train_batch_size": 3, "max_steps": 1,
        "logging_steps": 1, "save_strategy": "no", "bf16": False, "use_cpu": True, "report_to": "none",
        "disable_tqdm": True, "dataloader_num_workers": 0, "activation_checkpointing": False, "seed": 0,
        "num_frames": 2, "model_name_or_path": str(model), "dtype": "float32", "lora_r": 0,
        "beta_v": 0.1, "beta_a": 0.1, "beta_y": 0.1,
    }  # fmt: skip
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe))
    assert main([str(tmp_path / "r.yaml")]) == 0
    logs = [json.loads(x) for x in (tmp_path / "run" / "logs.jsonl").read_text().splitlines()]
    step = next(rec for rec in logs if "v/loss" in rec)
    assert step["v/loss"] > 0 and step["a/loss"] > 0 and step["y/loss"] > 0
    assert step["v/n"] == 2 and step["a/n"] == 2  # CLEAN-VA + CLEAN-V rows; CLEAN-VA + CLEAN-A rows


def test_the_anchor_pair_is_the_same_response(media, tmp_path):
    """The anchor's response is the chosen answer: mDPO's conditional preference, not a second y pair."""
    f = foreign_file(media, foreign_rows(media)[:2], "two.jsonl")
    import_dataset(ImportArgs(format="swift", files=[str(f)], output_dir=str(tmp_path / "o")))
    (row,) = load_from_disk(str(tmp_path / "o" / "preferences"))["train"]
    assert AnchorPair(row["visual_response"], row["visual_clean"], row["visual_perturbed"]) == AnchorPair(
        row["chosen"],
        to_json(from_json(row["media"])),
        to_json(Combine(video=Source("b.mp4"), audio=Source("a.mp4"))),
    )
