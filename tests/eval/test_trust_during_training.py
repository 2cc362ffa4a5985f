"""Trust during training (issue 55, part 3): ``trust_eval_steps`` scores a held-out AVTrustBench slice in
likelihood mode every N steps of a real tiny run, into logs.jsonl and TensorBoard (written offline); the
paired separation it logs, by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cavpref.data import BenchmarkItem
from cavpref.eval.benchmarks.avtrustbench.separation import first_pass_margins, separation
from cavpref.media.spec import clip, to_json

pytestmark = pytest.mark.usefixtures("one_thread")


def _item(id_, task, record, answer="A"):
    return BenchmarkItem(
        id=id_,
        task=task,
        source="music_avqa",
        category="Count",
        question="How many?",
        options={"A": "one", "B": "two", "C": "None of the above"},
        answer=answer,
        setting="instruction",
        template_id=0,
        media=to_json(clip("a.mp4")),
        abstain_letter="C",
        instruction="",
        meta={"record": record},
    )


def test_margins_and_separation_by_hand():
    items = {
        i.id: i
        for i in (
            _item("r1-clean", "CLEAN", "r1"),
            _item("r1-mvit", "MVIT", "r1", "C"),
            _item("r2-clean", "CLEAN", "r2"),
            _item("r2-mvit", "MVIT", "r2", "C"),
            _item("r3-mvit", "MVIT", "r3", "C"),  # no twin: not a pair
        )
    }

    def rec(item_id, per_token, rotation=0, tokens=(2, 2, 4)):
        sums = [v * n for v, n in zip(per_token, tokens)]
        return {"item_id": item_id, "status": "ok", "pass": 0, "rotation": rotation,
                "scores": {"sum": sums, "tokens": list(tokens), "letter": [None] * 3}}  # fmt: skip

    records = [
        rec("r1-clean", [-1.0, -3.0, -2.5]),  # margin -2.5 - (-1) = -1.5
        rec("r1-mvit", [-2.0, -2.0, -1.0]),  # +1.0
        # rotation 1 shows B, C, A: the abstention text sits under B (index 1): margin -1 - max(-4, -0.5)
        rec("r2-clean", [-4.0, -1.0, -0.5], rotation=1),  # -0.5
        rec("r2-mvit", [-1.0, -1.25, -2.0]),  # -1.0
        rec("r3-mvit", [-1.0, -1.0, 0.0]),
        {**rec("r2-mvit", [0, 0, 9]), "pass": 1},  # a later pass: not the first-pass margin
    ]
    m = first_pass_margins(records, items, "per_token")
    assert m == {"r1-clean": -1.5, "r1-mvit": 1.0, "r2-clean": -0.5, "r2-mvit": -1.0, "r3-mvit": 1.0}
    sep = separation(m, items)
    # pairs (1.0, -1.5): perturbed larger; (-1.0, -0.5): clean larger -> 50 %; abstains: perturbed 1/2, clean 0/2
    assert sep["MVIT"] == sep["all"] == {
        "pairs": 2, "separation": 50.0, "abstain perturbed": 50.0, "abstain clean": 0.0
    }  # fmt: skip


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    from cavpref.data_prep.build import PrepConfig, build
    from cavpref.data_prep.synthetic import WorldConfig, generate_world
    from cavpref.models.tiny import build_tiny_qwen_omni

    root = tmp_path_factory.mktemp("trust_cb")
    world = root / "world"
    generate_world(
        WorldConfig(out=str(world), seed=3, num_clips=10, workers=1, width=64, height=64, fps=4, duration=2.0)
    )
    prep = root / "prep"
    build(
        PrepConfig(
            output_dir=str(prep),
            world=str(world),
            tasks=["MVIT", "CLEAN"],
            seed=5,
            split_seed=5,
            val_fraction=0.3,
            formats=["arrow", "jsonl"],
            progress=False,
        )
    )
    model = build_tiny_qwen_omni(root / "model", hidden_size=32, num_hidden_layers=1, seed=0)
    return {"world": world, "prep": prep, "model": Path(model) if model else root / "model", "root": root}


def _recipe(path: Path, inputs, **overrides) -> Path:
    cfg = {
        "method": "dpo",
        "beta": 0.1,
        "learning_rate": 0.05,
        "optim": "sgd",
        "lr_scheduler_type": "constant",
        "train_dataset": str(inputs["prep"] / "preferences"),
        "media_root": str(inputs["world"]),
        "per_device_train_batch_size": 2,
        "max_steps": 3,
        "logging_steps": 1,
        "save_strategy": "no",
        "seed": 0,
        "bf16": False,
        "use_cpu": True,
        "activation_checkpointing": False,
        "report_to": "none",
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        "model_name_or_path": str(inputs["model"]),
        "dtype": "float32",
        "lora_r": 0,
        "num_frames": 2,
        "frame_height": 56,
        "frame_width": 56,
        "trust_eval_data": str(inputs["prep"]),
        "trust_eval_steps": 2,
        "trust_eval_limit": 2,
        "output_dir": str(path.parent / "run"),
    }
    cfg.update(overrides)
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_trust_is_scored_during_training_into_the_logs_and_tensorboard(inputs, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from cavpref.apps.train import main

    assert main([str(_recipe(tmp_path / "r.yaml", inputs, report_to="tensorboard"))]) == 0
    run = tmp_path / "run"
    logs = [json.loads(x) for x in (run / "logs.jsonl").read_text().splitlines()]
    trust = [r for r in logs if "trust/seconds" in r]
    assert [r["step"] for r in trust] == [2, 3]  # every 2 steps, and the last step
    for r in trust:
        assert (
            0 <= r["trust/instruction/paired"] <= 100 and 0 <= r["trust/instruction/false_abstention"] <= 100
        )
        assert 0 <= r["trust/instruction/clean"] <= 100 and 0 <= r["trust/instruction/separation"] <= 100
    # the same files as a standalone `cavpref eval avtrustbench`, on the validation split, per token
    results = json.loads((run / "trust" / "step-2" / "results.json").read_text())
    assert results["config"]["mode"] == "likelihood" and results["config"]["option_score"] == "per_token"
    assert results["metrics"]["trust"]["settings"]["instruction"]["paired"]["n"] >= 1
    assert results["metrics"]["trust"]["settings"]["instruction"]["paired"]["circular"] == pytest.approx(
        trust[0]["trust/instruction/paired"]
    )
    # its report.md (and so report.html) opens with the trust table, separation included (issue 56)
    report = (run / "trust" / "step-2" / "report.md").read_text()
    assert report.index("## Trust first") < report.index("## Items")
    sep = results["metrics"]["separation"]["instruction"]
    assert sep["n"] >= 1 and f"{sep['value']:.2f}" in report and "| always abstain |" in report
    # the model changed between the two evaluations, so the records are not replayed

    assert (run / "trust" / "step-3" / "results.json").is_file()
    events = [str(p) for p in run.rglob("events.out.tfevents.*")]
    assert events, "TensorBoard wrote no event file"
    tags = set()
    for e in events:
        acc = EventAccumulator(e)
        acc.Reload()
        tags |= set(acc.Tags()["scalars"])
    # transformers' TensorBoardCallback files training-time logs under "train/"
    assert {"train/trust/instruction/paired", "train/trust/seconds"} <= tags, sorted(tags)


def test_a_slice_without_its_split_or_clean_twins_is_refused_before_training(inputs, tmp_path, capsys):
    from cavpref.apps.train import main

    assert main([str(_recipe(tmp_path / "r.yaml", inputs, trust_eval_split="nosuch"))]) == 2
    assert "trust_eval_data" in capsys.readouterr().err
    assert not (tmp_path / "run" / "logs.jsonl").exists()  # nothing trained


def test_the_core_entry_refuses_trust_eval_instead_of_ignoring_it(inputs, tmp_path, capsys):
    from cavpref.train import main

    assert main([str(_recipe(tmp_path / "r.yaml", inputs))]) == 2
    assert "cavpref.apps.train.main" in capsys.readouterr().err
