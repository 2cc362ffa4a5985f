"""Launch-level guarantees, each with real processes:

* global-batch exactness — 2 CPU processes (gloo, ``accelerate launch``) with batch B each give the same
  losses and the same weights as 1 process with batch 2B: the robust normaliser and β's min-max are global;
* resume — a run SIGKILLed at a random step and resumed from its last checkpoint ends with exactly the
  weights of an uninterrupted run;
* the output folder holds the resolved config, versions, seed, logs and checkpoints.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from safetensors.torch import load_file

from cavpref.train import last_complete_checkpoint, main
from tests.helpers.launch import ROOT, accelerate_launch, env, losses, max_weight_diff, recipe


def test_two_processes_match_one_process_on_the_global_batch(fx, tmp_path):
    rec = recipe(fx, tmp_path / "r.yaml")
    one, two = tmp_path / "one", tmp_path / "two"
    assert main([str(rec), "--output_dir", str(one), "--per_device_train_batch_size", "4"]) == 0
    proc = accelerate_launch(
        "recipes/accelerate/cpu_2proc.yaml",
        "scripts/train.py",
        rec,
        "--output_dir",
        two,
        "--per_device_train_batch_size",
        2,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    l1, l2 = losses(one), losses(two)
    assert len(l1) == len(l2) == 2
    assert l2 == pytest.approx(l1, abs=1e-5)
    # step 2 has non-zero margins and calibrated β: a per-rank normaliser or min-max would differ here
    logs2 = [json.loads(x) for x in (two / "logs.jsonl").read_text().splitlines()]
    assert logs2[0]["rows/samples"] == 4.0 and logs2[1]["y/margin"] != 0.0
    assert max_weight_diff(one, two) < 1e-6


def test_sigkill_and_resume_ends_with_the_uninterrupted_weights(fx, tmp_path):
    steps = 4  # 9 samples, batch 4 -> 3 batches per epoch: the run crosses an epoch boundary
    rec = recipe(
        fx,
        tmp_path / "r.yaml",
        max_steps=steps,
        optim="adamw_torch",
        learning_rate=1e-3,
        lr_scheduler_type="linear",
        save_strategy="steps",
        save_steps=1,
    )
    full, killed = tmp_path / "full", tmp_path / "killed"
    # The reference run goes through the same subprocess (same OMP_NUM_THREADS) as the killed and resumed
    # ones: an in-process run inherits this pytest process's torch thread count, whose different reduction
    # order alone moves weights by ~1e-7.
    train_cmd = [sys.executable, "-m", "cavpref.apps.cli", "train", str(rec)]
    done = subprocess.run(
        [*train_cmd, "--output_dir", str(full), "--save_strategy", "no"],
        cwd=ROOT,
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]

    kill_after = random.Random().randint(1, steps - 2)
    proc = subprocess.Popen(
        [*train_cmd, "--output_dir", str(killed)],
        cwd=ROOT,
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    marker = killed / f"checkpoint-{kill_after}" / "trainer_state.json"
    deadline = time.time() + 240
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, f"run ended before the kill: {proc.stderr.read()[-2000:]}"
    resumed_from = last_complete_checkpoint(str(killed))
    assert resumed_from is not None and int(resumed_from.rsplit("-", 1)[1]) >= kill_after
    resumed = subprocess.run(
        [*train_cmd, "--output_dir", str(killed), "--resume_from_checkpoint", "last"],
        cwd=ROOT,
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert max_weight_diff(full, killed) == 0.0, f"killed after step {kill_after}"
    # the run folder: resolved config, versions, seed, logs, checkpoints
    resolved = yaml.safe_load((killed / "run_config.yaml").read_text())
    assert resolved["method"] == "cavpref" and resolved["dtype"] == "float32"
    assert "torch" in json.loads((killed / "versions.json").read_text())
    loss_cfg = json.loads((killed / "loss.json").read_text())
    assert loss_cfg["seed"] == 0 and loss_cfg["lambdas"] == {"y": 1.0, "v": 1.0, "a": 0.8}
    assert (killed / "logs.jsonl").exists() and (killed / f"checkpoint-{steps}").is_dir()


def test_last_complete_checkpoint_skips_a_partial_one(tmp_path):
    for step, complete in ((2, True), (3, True), (4, False)):
        d = tmp_path / f"checkpoint-{step}"
        d.mkdir()
        if complete:
            (d / "trainer_state.json").write_text(json.dumps({"global_step": step}))
    (tmp_path / "checkpoint-4" / "model.safetensors").write_bytes(b"partial")
    assert last_complete_checkpoint(str(tmp_path)) == str(tmp_path / "checkpoint-3")
    (tmp_path / "checkpoint-3" / "trainer_state.json").write_text('{"global_st')  # killed mid-write
    assert last_complete_checkpoint(str(tmp_path)) == str(tmp_path / "checkpoint-2")
    assert last_complete_checkpoint(str(tmp_path / "nope")) is None


def test_sweep_trains_evaluates_and_plots(fx, tmp_path):
    """scripts/sweep.py: one run per λ value, each evaluated by the eval module on benchmark items, Fig. 6 plot."""
    from cavpref.data import BenchmarkItem
    from cavpref.media.spec import clip, combine, to_json

    items = tmp_path / "items.jsonl"
    with open(items, "w") as f:
        f.writelines(
            json.dumps(
                BenchmarkItem(
                    id=f"{task}-q",
                    task=task,
                    source="test",
                    category="Existential",
                    question="Which instrument?",
                    options={"A": "a violin", "B": "a cello", "C": "None of the above"},
                    answer="C",
                    setting="instruction",
                    template_id=0,
                    media=to_json(media),
                    abstain_letter="C",
                ).to_row()
            )
            + "\n"
            for task, media in (("MAIT", combine(clip("a.mp4"), clip("b.mp4"))), ("MCIT", clip("a.mp4")))
        )
    from cavpref_lab import sweep

    out = tmp_path / "sweep"
    argv = [
        "--recipe",
        str(recipe(fx, tmp_path / "r.yaml", max_steps=1, per_device_train_batch_size=2)),
        "--out",
        str(out),
        "--lambda_a",
        "0.4",
        "1.6",
        "--eval_data",
        str(items),
        "--eval_media_root",
        str(fx["media"]),
        "--no_eval",
    ]
    assert sweep.main(argv[:-1]) == 0  # with evaluation
    summary = json.loads((out / "sweep.json").read_text())
    runs = summary["axes"]["lambda_a"]
    assert [r["value"] for r in runs] == [0.4, 1.6] and summary["tasks"]["lambda_a"] == "MAIT"
    assert all(set(r["accuracy"]) == {"MAIT"} and 0.0 <= r["accuracy"]["MAIT"] <= 100.0 for r in runs)
    assert json.loads((out / "lambda_a=0.4" / "loss.json").read_text())["lambdas"]["a"] == 0.4
    assert (out / "sweep.png").stat().st_size > 0
    # finished runs are reused; without evaluation the training metrics are plotted
    assert sweep.main(argv) == 0
    assert all(
        r["accuracy"] is None and r["train"]["loss"] > 0
        for r in json.loads((out / "sweep.json").read_text())["axes"]["lambda_a"]
    )


def test_a_rank_with_no_usable_row_drops_the_step_on_every_rank(fx, tmp_path):
    """2 gloo processes, batch 1 each, one of the step's two rows fails to decode (skip_bad_rows): one rank's
    micro-batch is empty. Planning the step over the other rank's rows alone would give the ranks different
    collective calls (a hang or mixed-up gathers); the step is dropped on both ranks instead: no weight moves,
    the step is counted as skipped, both rows are in skipped_rows.json."""
    from datasets import load_from_disk

    from cavpref.media.spec import from_json, to_json

    rows = load_from_disk(str(fx["prefs"])).select(range(2)).to_list()
    spec = from_json(rows[1]["media"])
    rows[1]["media"] = to_json(type(spec)(path="missing.mp4"))  # the second row's media does not exist
    from datasets import Dataset

    Dataset.from_list(rows).save_to_disk(str(tmp_path / "prefs"))
    rec = recipe(
        fx,
        tmp_path / "r.yaml",
        train_dataset=str(tmp_path / "prefs"),
        per_device_train_batch_size=1,
        max_steps=1,
        skip_bad_rows=True,
    )
    proc = accelerate_launch(
        "recipes/accelerate/cpu_2proc.yaml", "scripts/train.py", rec, "--output_dir", tmp_path / "run"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = tmp_path / "run"
    report = json.loads((run / "skipped_rows.json").read_text())
    ids = {r["id"] for r in report["rows"]}
    assert {rows[0]["id"], rows[1]["id"]} <= ids, report
    logs = [json.loads(x) for x in (run / "logs.jsonl").read_text().splitlines()]
    assert any(r.get("count/skipped_steps", 0) >= 1 for r in logs), logs
    assert not any("loss" in r for r in logs if "train_loss" not in r), logs
    start, end = (
        load_file(str(Path(fx["model"]) / "model.safetensors")),
        load_file(str(run / "model.safetensors")),
    )
    assert max(float((start[k] - end[k]).abs().max()) for k in start if k in end) == 0.0
