"""A rerun into a training run folder (issue 54 #1, #14): ^C is one line naming the command that resumes, the
same command resumes from the last complete checkpoint, ``logs.jsonl`` holds one run, a ^C swallowed while
DataLoader workers join still stops the run. Real tiny trainings of a few steps."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cavpref import interrupts
from cavpref.run_folder import set_aside_logs
from cavpref.train import main
from tests.helpers.launch import env
from tests.helpers.train_recipes import checkpointed_recipe

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.usefixtures("one_thread")


# the shared one-step checkpointed recipe (tests/helpers/train_recipes.py), as a 4-step DPO run that keeps
# its last checkpoint of every second step
RUN = {"method": "dpo", "max_steps": 4, "save_steps": 2, "save_total_limit": 1}


def recipe(fx, path: Path, **overrides) -> Path:
    return checkpointed_recipe(fx, path, **{**RUN, **overrides})


def _steps(out: Path, name: str = "logs.jsonl") -> list[int]:
    return [json.loads(x)["step"] for x in (out / name).read_text().splitlines()]


def test_ctrl_c_is_one_line_and_the_same_command_resumes_with_one_runs_logs(fx, tmp_path, caplog):
    """The issue's case: ^C at step 33 printed a KeyboardInterrupt traceback; the same command then trained
    from step 1, rotated away the checkpoints and appended a second run to logs.jsonl."""
    out = tmp_path / "run"
    rec = recipe(fx, tmp_path / "r.yaml", max_steps=40)
    argv = [str(rec), "--output_dir", str(out)]
    proc = subprocess.Popen(
        [sys.executable, "-m", "cavpref.apps.cli", "train", *argv],
        cwd=tmp_path,
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    marker = out / "checkpoint-2" / "trainer_state.json"
    deadline = time.time() + 240
    while not marker.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 130, err[-3000:]
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    last = err.strip().splitlines()[-1]
    assert last.startswith("cavpref train: interrupted at step ") and "checkpoint-" in last, last
    assert last.endswith(f"with the same command: cavpref train {' '.join(argv)}"), last
    stopped = int(last.split("interrupted at step ")[1].split(";")[0])
    assert 2 <= stopped < 40
    resumed_from = max(int(p.name.split("-")[1]) for p in out.glob("checkpoint-*"))
    # the same command, shorter only to keep the test short (max_steps may change on resume)
    assert main([*argv, "--max_steps", str(resumed_from + 2)]) == 0
    assert f"resuming from {out / f'checkpoint-{resumed_from}'}" in caplog.text
    state = json.loads((out / "trainer_state.json").read_text())
    assert state["global_step"] == resumed_from + 2
    steps = _steps(out)  # one run: steps 1..N once each, then the final summary record
    assert steps[:-1] == list(range(1, resumed_from + 3)) and steps[-1] == resumed_from + 2, steps
    undone = _steps(out, "logs.undone.jsonl") if stopped > resumed_from else []
    assert all(s > resumed_from for s in undone), undone


class _SwallowedCtrlC:
    """Raises SIGINT from ``__del__``, where Python prints "Exception ignored" and goes on: as a ^C lands
    while a DataLoader iterator's ``__del__`` joins its workers."""

    def __del__(self):
        signal.raise_signal(signal.SIGINT)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the swallowed ^C, on purpose
def test_a_ctrl_c_swallowed_while_workers_join_still_stops_the_training(fx, tmp_path):
    from transformers import TrainerCallback

    from cavpref.train import build_trainer, parse

    class SwallowAtStep2(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 2:
                _SwallowedCtrlC()  # made and dropped: its __del__ runs here

    rec = recipe(fx, tmp_path / "r.yaml", max_steps=6, save_strategy="no")
    args = parse([str(rec), "--output_dir", str(tmp_path / "run")])
    trainer = build_trainer(*args, callbacks=[SwallowAtStep2()])
    with pytest.raises(KeyboardInterrupt), interrupts.catch_interrupts():
        trainer.train()
    assert trainer.state.global_step == 2  # stopped at the step the ^C came in, not trained on to 6
    interrupts.check()  # the record ends with the block: a later run is not interrupted by it


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_the_quickstart_stages_stop_after_a_swallowed_ctrl_c(tmp_path):
    from cavpref.apps.quickstart.stages import Stages

    ran = []

    def first(cfg, stage):
        stage.dir.mkdir(parents=True)
        _SwallowedCtrlC()
        ran.append(stage.name)
        stage.finish()

    stages = Stages(None, tmp_path)
    with pytest.raises(KeyboardInterrupt), interrupts.catch_interrupts():
        stages("a", first)
        stages("b", lambda cfg, stage: ran.append(stage.name))
    assert ran == ["a"]


def test_half_written_checkpoints_or_a_finished_run_without_checkpoints_are_not_trained_over(
    fx, tmp_path, capsys
):
    out = tmp_path / "run"
    rec = recipe(fx, tmp_path / "r.yaml", max_steps=2, save_strategy="no")
    argv = [str(rec), "--output_dir", str(out)]
    assert main(argv) == 0
    model = (out / "model.safetensors").read_bytes()
    capsys.readouterr()
    assert main(argv) == 2  # a finished run, nothing to resume: its model would be trained over
    err = capsys.readouterr().err
    assert "holds a finished run (trainer_state.json, the final model) and no checkpoint to resume" in err
    assert "--overwrite_output_dir true" in err and err.count("\n") == 1
    (out / "checkpoint-1").mkdir()  # killed while writing its first checkpoint
    (out / "checkpoint-1" / "model.safetensors").write_bytes(b"partial")
    assert main(argv) == 2
    assert "half-written checkpoint(s) only (checkpoint-1" in capsys.readouterr().err
    assert (out / "model.safetensors").read_bytes() == model
    # asked for: it starts over, and the first run's log is kept aside, not mixed into the new one
    assert main([*argv, "--overwrite_output_dir", "true"]) == 0
    assert _steps(out) == [1, 2, 2] and _steps(out, "logs.undone.jsonl") == [1, 2, 2]


def test_set_aside_logs_keeps_the_steps_up_to_the_checkpoint_and_a_cut_line_moves(tmp_path):
    lines = [json.dumps({"step": s, "loss": 0.5}) for s in (1, 2, 3, 4)] + ['{"step": 5, "lo']
    (tmp_path / "logs.jsonl").write_text("\n".join(lines))
    assert set_aside_logs(str(tmp_path), 2) == 3
    assert _steps(tmp_path) == [1, 2]
    assert (tmp_path / "logs.undone.jsonl").read_text().splitlines() == lines[2:]
    assert set_aside_logs(str(tmp_path), 2) == 0
