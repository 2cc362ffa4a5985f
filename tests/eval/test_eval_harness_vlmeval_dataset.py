"""The VLMEvalKit dataset class module that ``cavpref eval export --harness vlmevalkit`` writes beside its TSV.

VLMEvalKit's custom-TSV loader reads a TSV without an ``image`` column as text-only MCQ, so the export ships
a dataset class whose ``build_prompt`` sends each row's video and audio (WorldSense's ``video`` / ``audio``
message entries) and whose ``evaluate`` hands the prediction file back to cavpref's scoring. The module is an
exported artefact, loaded here from the export folder with importlib; VLMEvalKit itself is not needed (its
stand-in base class loads the TSV) — the slow test registers it in a real ``vlmeval`` when one is importable.
"""

import csv
import importlib.util
import json
import py_compile
import sys

import numpy as np
import pytest

from cavpref.data import BenchmarkItem
from cavpref.eval.cli import main
from cavpref.media.spec import clip, drop_video, mute, to_json
from cavpref.media.write import write_mp4

TASKS = ["CLEAN", "MAT", "MVT"]


def _item(task, setting, answer, media):
    options = {"A": "piano", "B": "violin", "C": "drum"}
    if setting == "instruction":
        options["D"] = "None of the above"
    return BenchmarkItem(
        id=f"{task}:{setting}:r1",
        task=task,
        source="music_avqa",
        category="Counting",
        question="Which instrument plays?",
        options=options,
        answer=answer if answer or setting == "base" else "D",
        setting=setting,
        template_id=0,
        media=to_json(media),
        abstain_letter="D" if setting == "instruction" else None,
        instruction="If none fits, answer {abstain_letter}." if setting == "instruction" else "",
        meta={"record": "r1"},
    )


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    root = tmp_path_factory.mktemp("vlm_ds")
    t = np.arange(16000, dtype=np.float32) / 16000
    write_mp4(
        root / "clip.mp4", np.full((4, 32, 32, 3), 90, np.uint8), 4.0, 0.3 * np.sin(880 * np.pi * t), 16000
    )
    src = clip("clip.mp4")
    items = [
        _item(task, setting, answer, media)
        for setting in ("base", "instruction")
        for task, answer, media in (
            ("CLEAN", "A", src),
            ("MAT", None, mute(src)),
            ("MVT", None, drop_video(src)),
        )
    ]
    (root / "items.jsonl").write_text("".join(json.dumps(i.to_row()) + "\n" for i in items))
    out = root / "export"
    assert main(["export", "--harness", "vlmevalkit", "--data", str(root / "items.jsonl"), "--output",
                 str(out), "--tasks", *TASKS]) == 0  # fmt: skip
    return root, out


def _load(folder, name="cavpref_vlmeval_under_test"):
    spec = importlib.util.spec_from_file_location(name, folder / "cavpref_vlmeval.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _table(out):
    with open(out / "avtrustbench_cavpref_circular.tsv", encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def test_the_dataset_class_sends_each_rows_video_audio_and_exact_prompt(exported):
    _, out = exported
    py_compile.compile(str(out / "cavpref_vlmeval.py"), doraise=True)
    module = _load(out)
    assert module.DATASET_NAME == "avtrustbench_cavpref_circular"
    assert module.CavprefAVDataset.supported_datasets() == ["avtrustbench_cavpref_circular"]
    assert module.CavprefAVDataset.force_use_dataset_prompt  # a model's own MCQ prompt must not replace ours
    dataset = module.CavprefAVDataset("avtrustbench_cavpref_circular")
    table = _table(out)
    # CLEAN, MAT, MVT: 3 rotations in the base setting, 4 with the abstention option
    assert len(dataset) == len(table) == 3 * 3 + 3 * 4
    for i, row in enumerate(table):
        want = []
        if row["video_path"]:
            want.append({"type": "video", "value": row["video_path"]})
        if row["audio_path"]:
            want.append({"type": "audio", "value": row["audio_path"]})
        want.append({"type": "text", "value": row["prompt"]})
        assert dataset.build_prompt(i) == want == dataset.build_prompt(row)
        task = row["category"]
        kinds = [m["type"] for m in want]
        # CLEAN: the clip and its sound as a WAV; MAT: the muted video alone; MVT: the audio alone
        assert (
            kinds
            == {"CLEAN": ["video", "audio", "text"], "MAT": ["video", "text"], "MVT": ["audio", "text"]}[task]
        )
        if task == "CLEAN":
            assert want[0]["value"].endswith("clip.mp4") and want[1]["value"].endswith(".wav")
        assert want[-1]["value"].startswith("Which instrument plays?")


def test_evaluate_hands_the_prediction_file_back_to_cavpref_scoring(exported, tmp_path):
    root, out = exported
    table = _table(out)
    pred = tmp_path / "Qwen2.5-Omni-7B_avtrustbench_cavpref_circular.tsv"
    with open(pred, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, [*table[0], "prediction"], delimiter="\t")
        writer.writeheader()
        for row in table:  # right on every pass but MVT's rotations (an option instead of the abstention)
            guess = row["answer"] if row["category"] != "MVT" else "A"
            writer.writerow(
                {**row, "prediction": f"The answer is {guess}." if guess else "The video is missing."}
            )
    got = _load(out, "cavpref_vlmeval_eval").CavprefAVDataset.evaluate(str(pred), model="exact_matching")
    run = tmp_path / "run"
    assert main(["score", "--harness", "vlmevalkit", "--predictions", str(pred), "--data",
                 str(root / "items.jsonl"), "--tasks", *TASKS, "--output", str(run)]) == 0  # fmt: skip
    metrics = json.loads((run / "results.json").read_text())["metrics"]
    assert got["circular"] == metrics["overall"]["circular"]
    assert (
        got["trust_instruction_paired"] == metrics["trust"]["settings"]["instruction"]["paired"]["circular"]
    )
    assert (
        got["trust_instruction_paired_n"] == 2 and got["trust_instruction_paired"] == 50.0
    )  # MAT yes, MVT no


@pytest.mark.slow
def test_vlmevalkit_builds_the_exported_dataset_by_name(exported):
    """With VLMEvalKit importable: the module registers the class, and VLMEvalKit's own ``build_dataset``
    returns it, its rows loaded by ImageBaseDataset."""
    datasets = pytest.importorskip("vlmeval.dataset")
    _, out = exported
    module = _load(out, "cavpref_vlmeval_registered")
    dataset = datasets.build_dataset("avtrustbench_cavpref_circular")
    assert isinstance(dataset, module.CavprefAVDataset)
    assert datasets.DATASET_TYPE("avtrustbench_cavpref_circular") == "MCQ"
    row = dataset.data.iloc[0]
    assert dataset.build_prompt(row)[-1] == {"type": "text", "value": row["prompt"]}
