"""``cavpref data export|import``: cavpref preference rows <-> LLaMA-Factory / ms-swift / TRL files (issue 41).

The foreign fixtures are written here from the formats' documentation (LLaMA-Factory ``data/README.md`` and its
``dataset_info.json`` layout, ms-swift's Custom-dataset page, TRL's dataset-formats page), not copied from their
data files. Round trip: every task's row (anchors, β deltas) exports to all three formats and reads back equal.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from datasets import load_from_disk
from huggingface_hub import DatasetCard

from cavpref.data_prep.formats import ExportArgs, ImportArgs, export_dataset, import_dataset
from cavpref.data_prep.formats.cli import main as data_main
from cavpref.data_prep.readers import ReaderError
from cavpref.media.spec import Combine, Source, from_json, mute
from tests.helpers import trainer_fixtures as F
from tests.helpers import user_data

pytestmark = pytest.mark.usefixtures("one_thread")
FORMATS = ("llamafactory", "swift", "trl")


@pytest.fixture(scope="module")
def prefs(tmp_path_factory):
    """Every task's preference row (anchors, deltas) saved like a prep build, clips under media/."""
    root = tmp_path_factory.mktemp("prefs")
    F.write_clips(root / "media")
    F.dataset(1).save_to_disk(str(root / "prefs"))
    return {"root": root, "rows": [dict(r) for r in load_from_disk(str(root / "prefs"))]}


@pytest.mark.parametrize("fmt", FORMATS)
def test_preference_rows_export_and_read_back_equal(prefs, fmt, tmp_path):
    root = prefs["root"]
    out = tmp_path / "x"
    summary = export_dataset(
        ExportArgs(format=fmt, data=str(root / "prefs"), output_dir=str(out), media_root=str(root / "media"))
    )
    # the three compositional rows cut / join / mix clips: written once each as a silent mp4 + a wav
    assert summary["media"] == {"rows with whole-file media": 6, "materialized rows": 3, "files written": 6}
    rows = [json.loads(x) for x in (out / "cavpref_train.jsonl").read_text().splitlines()]
    mcit = rows[[r["id"] for r in prefs["rows"]].index("MCIT-0")]
    assert mcit["videos"] == mcit["audios"] == [str((root / "media" / "a.mp4").resolve())]
    assert all(Path(p).is_file() for r in rows for p in r["videos"] + r["audios"])
    native = {"cavpref_use_audio_in_video"} if fmt == "swift" else set()  # ms-swift has its own column
    assert {k for k in mcit if k.startswith("cavpref_")} == {f"cavpref_{k}" for k in prefs["rows"][0]} - {
        "cavpref_prompt", "cavpref_chosen", "cavpref_rejected"} - native  # fmt: skip
    card = DatasetCard.load(out / "README.md")
    assert fmt in card.data.tags and "cavpref_*" in card.text and "ignore" in card.text
    stats = import_dataset(
        ImportArgs(format=fmt, files=[str(out / "cavpref_train.jsonl")], output_dir=str(tmp_path / "i"))
    )
    assert stats["imported"] == 9 and stats["reconcile"] and stats["counts"]["from cavpref_* columns"] == 9
    assert stats["data_root"] == [str((root / "media").resolve())]  # the export's media root (export.json)
    assert [dict(r) for r in load_from_disk(str(tmp_path / "i" / "preferences"))["train"]] == prefs["rows"]


def test_each_format_writes_its_documented_layout(prefs, tmp_path):
    root = prefs["root"]
    first = {}
    for fmt in FORMATS:
        args = ExportArgs(format=fmt, data=str(root / "prefs"), output_dir=str(tmp_path / fmt), paths="relative",
                          media_root=str(root / "media"), splits=["train"])  # fmt: skip
        export_dataset(args)
        first[fmt] = json.loads((tmp_path / fmt / "cavpref_train.jsonl").read_text().splitlines()[0])
        assert all((tmp_path / fmt / p).is_file() for p in first[fmt]["videos"])  # relative to the folder
    lf = first["llamafactory"]
    assert lf["messages"] == [{"role": "user", "content": "<video><audio>Which instrument is playing?"}]
    assert lf["chosen"] == {"role": "assistant", "content": "None of the above"}
    info = json.loads((tmp_path / "llamafactory" / "dataset_info.json").read_text())
    assert info["cavpref_train"] == {
        "file_name": "cavpref_train.jsonl", "formatting": "sharegpt", "ranking": True,
        "columns": {"messages": "messages", "videos": "videos", "audios": "audios", "chosen": "chosen",
                    "rejected": "rejected"},
        "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user", "assistant_tag": "assistant",
                 "system_tag": "system"},
    }  # fmt: skip
    sw = first["swift"]
    assert [m["role"] for m in sw["messages"]] == ["user", "assistant"] and sw[
        "rejected_response"
    ] == "a cello"
    trl = first["trl"]
    assert trl["prompt"][0]["content"][:2] == [{"type": "video"}, {"type": "audio"}]
    assert trl["rejected"] == [{"role": "assistant", "content": [{"type": "text", "text": "a cello"}]}]
    export_dataset(ExportArgs(format="trl", data=str(root / "prefs"), output_dir=str(tmp_path / "sft"), kind="sft",
                              media_root=str(root / "media")))  # fmt: skip
    sft = json.loads((tmp_path / "sft" / "cavpref_train.jsonl").read_text().splitlines()[0])
    assert "completion" in sft and "rejected" not in sft


@pytest.fixture(scope="module")
def foreign(tmp_path_factory):
    """A user's files as the three projects document them: a silent mp4 and its sound as a separate file."""
    root = tmp_path_factory.mktemp("foreign")
    user_data.write_user_folder(root)  # clips/q4.mp4 is silent, audio/q4.wav is its sound
    return root


def _lf_files(root: Path) -> Path:
    """data/README.md "Multimodal Video / Audio Dataset" + "OpenAI Format" tags, as its mllm_video_audio_demo
    entry declares them, and a ShareGPT preference file with the default from / value tags."""
    data = root / "lf"
    data.mkdir(exist_ok=True)
    sft = [
        {"messages": [{"content": "<video><audio>What is the video describing?", "role": "user"},
                      {"content": "A coloured square and a tone.", "role": "assistant"}],
         "videos": ["../clips/q4.mp4"], "audios": ["../audio/q4.wav"]},
        {"messages": [{"content": "<video><audio>Which instrument is playing?", "role": "user"},
                      {"content": "The violin.", "role": "assistant"}],
         "videos": ["../clips/q0.mp4"], "audios": ["../clips/q0.mp4"]},
    ]  # fmt: skip
    (data / "my_av.json").write_text(json.dumps(sft, indent=2))
    pairs = [
        {"conversations": [{"from": "human", "value": "<video>Which instrument is playing?"}],
         "chosen": {"from": "gpt", "value": "The piano."}, "rejected": {"from": "gpt", "value": "The drum."},
         "videos": ["../clips/q1.mp4"]},
    ]  # fmt: skip
    (data / "my_pairs.json").write_text(json.dumps(pairs))
    info = {
        "my_av": {"file_name": "my_av.json", "formatting": "sharegpt",
                  "columns": {"messages": "messages", "videos": "videos", "audios": "audios"},
                  "tags": {"role_tag": "role", "content_tag": "content", "user_tag": "user",
                           "assistant_tag": "assistant"}},
        "my_pairs": {"file_name": "my_pairs.json", "formatting": "sharegpt", "ranking": True,
                     "columns": {"messages": "conversations", "chosen": "chosen", "rejected": "rejected",
                                 "videos": "videos"}},
    }  # fmt: skip
    (data / "dataset_info.json").write_text(json.dumps(info, indent=2))
    return data


def test_llamafactory_video_audio_sharegpt_imports(foreign, tmp_path):
    data = _lf_files(foreign)
    stats = import_dataset(ImportArgs(format="llamafactory", dataset_info=str(data / "dataset_info.json"),
                                      dataset="my_av", data_root=str(foreign), output_dir=str(tmp_path / "sft")))  # fmt: skip
    assert (
        stats["imported"] == 2 and stats["counts"]["sft rows"] == 2 and stats["data_root"] == [str(foreign)]
    )
    assert stats["counts"]["video + separate audio"] == 1 and stats["counts"]["video with its own audio"] == 1
    rows = load_from_disk(str(tmp_path / "sft" / "preferences"))["train"]
    assert from_json(rows[0]["media"]) == Combine(video=Source("clips/q4.mp4"), audio=Source("audio/q4.wav"))
    assert from_json(rows[1]["media"]) == Source("clips/q0.mp4")  # the same file in both lists: the clip
    assert (rows[0]["prompt"], rows[0]["chosen"], rows[0]["rejected"]) == (
        "What is the video describing?", "A coloured square and a tone.", "")  # fmt: skip
    assert rows[0]["task"] == "CLEAN" and rows[0]["source"] == "llamafactory"
    assert rows[0]["id"] == "llamafactory:my_av.json:0" and rows[0]["source_ids"] == [
        "audio/q4.wav",
        "clips/q4.mp4",
    ]
    manifest = json.loads((tmp_path / "sft" / "manifest.json").read_text())
    assert manifest["tasks"]["CLEAN"]["switches"] == [0, 0] and len(manifest["fingerprint"]) == 64
    card = DatasetCard.load(tmp_path / "sft" / "README.md")
    assert "llamafactory" in card.data.tags and f"media_root: {foreign}" in card.text
    # the preference file, read without dataset_info.json (layout guessed), and a muted video on request
    args = ImportArgs(format="llamafactory", files=[str(data / "my_pairs.json")], data_root=str(foreign),
                      output_dir=str(tmp_path / "pairs"), use_audio_in_video=False)  # fmt: skip
    assert import_dataset(args)["counts"] == {"muted video": 1, "preference pairs": 1}
    (row,) = load_from_disk(str(tmp_path / "pairs" / "preferences"))["train"]
    assert (row["prompt"], row["chosen"], row["rejected"]) == (
        "Which instrument is playing?",
        "The piano.",
        "The drum.",
    )
    assert from_json(row["media"]) == mute(Source("clips/q1.mp4"))


def _swift_file(root: Path) -> Path:
    """ms-swift Custom-dataset.md, "RLHF" (DPO) rows + "Multimodal" videos / audios, three ways of giving the
    rejected answer."""
    base = {"videos": [str(root / "clips" / "q4.mp4")], "audios": [str(root / "audio" / "q4.wav")]}
    user = {"role": "user", "content": "<video><audio>Which instrument is playing?"}
    rows = [
        {"messages": [user, {"role": "assistant", "content": "A guitar."}], "rejected_response": "A flute.", **base},
        {"messages": [user, {"role": "assistant", "content": "A guitar."}],
         "rejected_response": [{"role": "assistant", "content": "A drum."}], **base},
        {"messages": [user, {"role": "assistant", "content": "A guitar."}],
         "rejected_messages": [user, {"role": "assistant", "content": "A piano."}], **base,
         "rejected_videos": base["videos"]},
    ]  # fmt: skip
    path = root / "swift_dpo.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_swift_preference_file_imports(foreign, tmp_path):
    stats = import_dataset(
        ImportArgs(format="swift", files=[str(_swift_file(foreign))], output_dir=str(tmp_path / "o"))
    )
    assert stats["imported"] == 3 and stats["counts"]["preference pairs"] == 3
    rows = load_from_disk(str(tmp_path / "o" / "preferences"))["train"]
    assert [r["rejected"] for r in rows] == ["A flute.", "A drum.", "A piano."]
    assert {r["media"] for r in rows} == {('{"audio":{"end":null,"op":"source","path":"audio/q4.wav","start":0.0},'
                                          '"op":"combine","video":{"end":null,"op":"source","path":"clips/q4.mp4",'
                                          '"start":0.0}}')}  # fmt: skip


def test_trl_standard_and_conversational_rows_import(foreign, tmp_path):
    rows = [
        {"prompt": "Which instrument?", "chosen": "Violin.", "rejected": "Drum.", "videos": ["clips/q0.mp4"]},
        {"prompt": [{"role": "user", "content": [{"type": "video"}, {"type": "text", "text": "Which instrument?"}]}],
         "completion": [{"role": "assistant", "content": [{"type": "text", "text": "Violin."}]}],
         "videos": ["clips/q0.mp4"]},
    ]  # fmt: skip
    (foreign / "trl.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    stats = import_dataset(
        ImportArgs(format="trl", files=[str(foreign / "trl.jsonl")], output_dir=str(tmp_path / "o"))
    )
    assert stats["counts"] == {"preference pairs": 1, "sft rows": 1, "video with its own audio": 2}


BAD = [
    ("swift", {"messages": [{"role": "user", "content": "<video>a"}, {"role": "assistant", "content": "b"},
                            {"role": "user", "content": "c"}, {"role": "assistant", "content": "d"}],
               "videos": ["v.mp4"]}, "messages", "expected one user turn and its answer"),
    ("swift", {"messages": [{"role": "user", "content": "<image>a"}, {"role": "assistant", "content": "b"}],
               "images": ["x.png"]}, "images", "images are not supported"),
    ("swift", {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
               "videos": ["v.mp4"]}, "messages", "0 <video> tag(s) but 1 file(s)"),
    ("swift", {"messages": [{"role": "user", "content": "<video><video>a"}, {"role": "assistant", "content": "b"}],
               "videos": ["v.mp4", "w.mp4"]}, "videos", "more than one file"),
    ("swift", {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "<video>a"},
                            {"role": "assistant", "content": "b"}], "videos": ["v.mp4"]}, "system", "a system prompt"),
    ("swift", {"messages": [{"role": "user", "content": "<video>a"}, {"role": "assistant", "content": "b"}],
               "videos": ["../v.mp4"]}, "videos", "outside the data root"),
    # rejected_videos that differ from the chosen side's are an anchor pair now (tests/test_formats_conditional.py)
    ("swift", {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}], "label": True},
     "label", "KTO rows have no preference pair"),
    ("swift", {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
     "videos", "neither a video nor an audio file"),
    ("swift", {"conversation": [{"human": "a", "assistant": "b"}]}, "messages", "missing"),
    ("trl", {"chosen": [{"role": "user", "content": "a"}], "rejected": []}, "prompt", "missing"),
    ("trl", {"prompt": "a", "chosen": "", "rejected": "c", "videos": ["v.mp4"]}, "chosen", "chosen is missing or empty"),
    ("llamafactory", {"messages": [{"role": "user", "content": "<video>a"}], "chosen": "b", "videos": ["v.mp4"]},
     "messages", "expected the turns ['user', 'assistant']"),
]  # fmt: skip


@pytest.mark.parametrize("fmt,bad,field,problem", BAD)
def test_bad_records_name_file_record_line_and_field(tmp_path, fmt, bad, field, problem):
    good = {"swift": {"messages": [{"role": "user", "content": "<video>q"}, {"role": "assistant", "content": "y"}],
                      "videos": ["v.mp4"]},
            "trl": {"prompt": "q", "chosen": "y", "rejected": "n", "videos": ["v.mp4"]},
            "llamafactory": {"messages": [{"role": "user", "content": "<video>q"}, {"role": "assistant", "content": "y"}],
                             "videos": ["v.mp4"]}}[fmt]  # fmt: skip
    f = tmp_path / "d" / "x.jsonl"
    f.parent.mkdir()
    f.write_text(json.dumps(good) + "\n\n" + json.dumps(bad) + "\n")
    for name in ("v.mp4", "w.mp4"):  # import checks that the media exist
        (f.parent / name).write_bytes(b"")
    with pytest.raises(ReaderError) as info:
        import_dataset(ImportArgs(format=fmt, files=[str(f)], output_dir=str(tmp_path / "o")))
    err = info.value
    assert (err.file, err.index, err.line, err.field, err.problem) == (str(f), 1, 3, field, problem)
    assert str(err).startswith(f"{f}: record 1 (line 3): field '{field}': {problem}")
    stats = import_dataset(
        ImportArgs(format=fmt, files=[str(f)], output_dir=str(tmp_path / "s"), on_error="skip")
    )
    assert stats["imported"] == 1 and stats["skipped"] == {f"{field}: {problem}": 1} and stats["reconcile"]


def test_system_prompts_drop_on_request_and_outputs_never_overwrite_inputs(tmp_path, capsys):
    f = tmp_path / "in" / "s.jsonl"
    f.parent.mkdir()
    f.write_text(json.dumps({"messages": [{"role": "system", "content": "Be brief."},
                                          {"role": "user", "content": "<audio>q"}, {"role": "assistant", "content": "y"}],
                             "audios": ["a.wav"]}) + "\n")  # fmt: skip
    (f.parent / "a.wav").write_bytes(b"")  # import checks that the media exist
    argv = ["import", "--format", "swift", "--files", str(f), "--system", "drop"]
    assert data_main([*argv, "--output_dir", str(tmp_path / "o")]) == 0
    assert "imported 1 of 1 records" in capsys.readouterr().out
    assert json.loads((tmp_path / "o" / "stats.json").read_text())["counts"]["system prompts dropped"] == 1
    assert data_main([*argv, "--output_dir", str(tmp_path / "o")]) == 0  # its own folder: imported again
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "keep.txt").write_text("mine")
    assert data_main([*argv, "--output_dir", str(tmp_path / "busy")]) == 1  # a folder of the user's: refused
    assert "is not empty (keep.txt) and was not created by `cavpref data import`" in capsys.readouterr().err
    assert data_main([*argv, "--output_dir", str(tmp_path / "busy"), "--overwrite_output_dir", "true"]) == 0
    assert (tmp_path / "busy" / "keep.txt").read_text() == "mine"  # written into, nothing else deleted
    assert data_main([*argv, "--output_dir", str(tmp_path / "in"), "--overwrite_output_dir", "true"]) == 1
    err = capsys.readouterr().err
    assert "contains the --files[0] file" in err and f.is_file()  # the input survives --overwrite_output_dir


@pytest.mark.parametrize("which", ["llamafactory_sft", "swift_dpo"])
def test_imported_sets_train_one_step(foreign, tmp_path, which):
    from cavpref.train import main

    if which == "llamafactory_sft":
        data = _lf_files(foreign)
        args = ImportArgs(format="llamafactory", dataset_info=str(data / "dataset_info.json"), dataset="my_av",
                          data_root=str(foreign), output_dir=str(tmp_path / "imp"))  # fmt: skip
        method = "sft"
    else:
        args = ImportArgs(format="swift", files=[str(_swift_file(foreign))], output_dir=str(tmp_path / "imp"))
        method = "dpo"
    import_dataset(args)
    recipe = {
        "method": method,
        "train_dataset": str(tmp_path / "imp" / "preferences"),
        "media_root": str(foreign),
        "output_dir": str(tmp_path / "run"),
        "per_device_train_batch_size": 2,
        "max_steps": 1,
        "logging_steps": 1,
        "save_strategy": "no",
        "bf16": False,
        "use_cpu": True,
        "report_to": "none",
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        "activation_checkpointing": False,
        "seed": 0,
        "num_frames": 2,
        "model_name_or_path": str(F.tiny_model(tmp_path / "model")),
        "dtype": "float32",
        "lora_r": 0,
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe))
    assert main([str(tmp_path / "r.yaml")]) == 0
    logs = [json.loads(x) for x in (tmp_path / "run" / "logs.jsonl").read_text().splitlines()]
    assert any(rec.get("loss", 0) > 0 for rec in logs)
