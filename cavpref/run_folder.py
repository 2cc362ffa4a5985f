"""A training run folder across invocations: which checkpoint a run starts from, one run's logs, the ^C line.

Rerunning ``cavpref train`` into its own ``output_dir`` after an interruption must never train from step 1 over
the run's checkpoints (``save_total_limit`` would then rotate them away) nor append a second run to
``logs.jsonl``. So a rerun resumes from the last *complete* checkpoint (as ``cavpref quickstart`` does), with
no flag; a folder with only half-written checkpoints, or a finished run without checkpoints, is refused with
what to do; the log records of steps the resumed run redoes are moved to ``logs.undone.jsonl``. ^C prints one
line naming the checkpoint and the command that resumes, not a traceback (issue 54 #1).
"""

from __future__ import annotations

import json
import os
import shlex

LOGS = "logs.jsonl"
UNDONE_LOGS = "logs.undone.jsonl"  # records of steps a resume or restart redid (they would read as a 2nd run)
_LAST = ("last", "auto", "true", "True")


class TrainingInterrupted(KeyboardInterrupt):
    """^C during ``cavpref train`` with the run folder and the step reached (a ``KeyboardInterrupt``, so callers
    that stop on ^C still stop)."""

    def __init__(self, output_dir: str, step: int | None):
        super().__init__(output_dir, step)
        self.output_dir, self.step = output_dir, step


def checkpoint_steps(output_dir: str) -> list[int]:
    """The N of every ``checkpoint-N`` folder in ``output_dir``, ascending (complete or not)."""
    if not os.path.isdir(output_dir):
        return []
    steps = []
    for name in os.listdir(output_dir):
        head, _, num = name.partition("-")
        if head == "checkpoint" and num.isdigit():
            steps.append(int(num))
    return sorted(steps)


def last_complete_checkpoint(output_dir: str) -> str | None:
    """The newest ``checkpoint-N`` whose ``trainer_state.json`` (written last by the Trainer) is complete.

    A run killed while writing a checkpoint leaves a partial folder; ``get_last_checkpoint`` would pick it
    and the resume would fail, so partial ones are passed over."""
    for step in reversed(checkpoint_steps(output_dir)):
        path = os.path.join(output_dir, f"checkpoint-{step}")
        try:
            with open(os.path.join(path, "trainer_state.json")) as f:
                if json.load(f).get("global_step") == step:
                    return path
        except (OSError, ValueError, AttributeError):
            continue
    return None


def _partial(output_dir: str) -> str:
    return ", ".join(f"checkpoint-{n}" for n in checkpoint_steps(output_dir))


def checkpoint_to_resume(output_dir: str, resume: str | None) -> str | None:
    """The checkpoint ``resume_from_checkpoint`` names: ``last`` (``auto`` / ``true``) is the newest complete one
    in ``output_dir``. Nothing to resume is an error, never a silent start from step 1: a mistyped folder, or a
    run killed while writing its only checkpoint (delete it to start over)."""
    if not resume:
        return None
    if resume not in _LAST:
        if not os.path.isfile(os.path.join(resume, "trainer_state.json")):
            raise ValueError(
                f"resume_from_checkpoint {resume!r}: not a complete checkpoint (no trainer_state.json there)"
            )
        return resume
    found = last_complete_checkpoint(output_dir)
    if found is not None:
        return found
    if checkpoint_steps(output_dir):
        raise ValueError(
            f"{output_dir}: resume_from_checkpoint {resume}: no complete checkpoint ({_partial(output_dir)}: "
            "trainer_state.json missing or unfinished, a run killed while saving); delete them to start from "
            "step 1"
        )
    raise ValueError(
        f"{output_dir}: resume_from_checkpoint {resume}: no checkpoint there (a mistyped output_dir?); leave "
        "resume_from_checkpoint unset to start from step 1"
    )


def start_checkpoint(output_dir: str, resume: str | None, overwrite: bool = False) -> str | None:
    """The checkpoint this invocation starts from. ``resume_from_checkpoint`` set: ``checkpoint_to_resume``.
    Unset, in a folder an earlier run left checkpoints in: the last complete one (a rerun of the same
    command resumes); only half-written ones, or a finished run's model without any checkpoint, are refused
    (starting from step 1 would train over them) unless ``overwrite`` (``--overwrite_output_dir true``)."""
    if resume:
        return checkpoint_to_resume(output_dir, resume)
    found = last_complete_checkpoint(output_dir)
    if found is not None or overwrite:
        return found
    fresh = "to start from step 1, choose a new output_dir or pass --overwrite_output_dir true"
    if checkpoint_steps(output_dir):
        raise ValueError(
            f"{output_dir}: holds an earlier run's half-written checkpoint(s) only ({_partial(output_dir)}: "
            f"trainer_state.json missing or unfinished, a run killed while saving), nothing to resume; {fresh}"
        )
    if os.path.isfile(os.path.join(output_dir, "trainer_state.json")):
        raise ValueError(
            f"{output_dir}: holds a finished run (trainer_state.json, the final model) and no checkpoint to "
            f"resume from; {fresh} (the model there is then replaced)"
        )
    return None


def checkpoint_step(checkpoint: str | None) -> int:
    """The global step a run resumed from ``checkpoint`` starts at (0: a start from step 1)."""
    if not checkpoint:
        return 0
    with open(os.path.join(checkpoint, "trainer_state.json")) as f:
        return int(json.load(f).get("global_step") or 0)


def set_aside_logs(output_dir: str, step: int) -> int:
    """Keep ``logs.jsonl`` one run's history: the records past ``step`` (the steps this run trains again, or an
    earlier run's whole log when it starts from step 1) move to ``logs.undone.jsonl`` (appended, nothing is
    lost); returns how many moved. A line that is not a JSON record (a write cut by the kill) moves too."""
    path = os.path.join(output_dir, LOGS)
    if not os.path.isfile(path):
        return 0
    kept, undone = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                keep = isinstance(record, dict) and int(record.get("step", step + 1)) <= step
            except (ValueError, TypeError):
                keep = False
            (kept if keep else undone).append(line if line.endswith("\n") else line + "\n")
    if not undone:
        return 0
    with open(os.path.join(output_dir, UNDONE_LOGS), "a", encoding="utf-8") as f:
        f.writelines(undone)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.writelines(kept)
    os.replace(tmp, path)
    return len(undone)


def interrupted_line(prog: str, argv: list[str], err: KeyboardInterrupt) -> str:
    """The one line ^C prints: where the run stopped, the checkpoint a rerun resumes from, the command."""
    command = f"{prog} {shlex.join(argv)}"
    if not isinstance(err, TrainingInterrupted):
        return f"{prog}: interrupted before training started: `{command}` starts it again"
    at = f" at step {err.step}" if err.step is not None else ""
    found = last_complete_checkpoint(err.output_dir)
    if found is None:
        return (
            f"{prog}: interrupted{at}, before the first checkpoint was saved: `{command}` starts again from "
            "step 1"
        )
    return f"{prog}: interrupted{at}; resume from {found} with the same command: {command}"


def close_progress_bars() -> None:
    """Close the progress bars a ^C left open (the Trainer's), so none is redrawn after the one-line message."""
    try:
        from tqdm import tqdm
    except ImportError:
        return
    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()
