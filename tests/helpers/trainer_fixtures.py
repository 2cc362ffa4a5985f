"""Shared builders for the trainer tests (no tests here): real mp4 clips and preference rows for all 9 tasks
(``cavpref.bench.rows``, shared with the benchmarks and the GPU check), a tiny Qwen2.5-Omni thinker on disk.
Also runnable as a script (``python -m tests.helpers.trainer_fixtures OUT`` from the repository root) so subprocess tests (accelerate
launch, resume) get the same inputs."""

from __future__ import annotations

import sys
from pathlib import Path

from cavpref.bench.rows import CLIPS, examples, write_clips

__all__ = ["CLIPS", "build_all", "dataset", "examples", "shared", "tiny_model", "write_clips"]


def dataset(n_per_task: int = 1, seed: int = 0, tasks=None):
    from datasets import Dataset

    rows = [e.to_row() for e in examples(n_per_task, seed) if tasks is None or e.task in tasks]
    return Dataset.from_list(rows)


def tiny_model(path: Path) -> Path:
    from cavpref.models.tiny import build_tiny_qwen_omni

    if not (path / "config.json").exists():
        build_tiny_qwen_omni(
            path,
            hidden_size=32,
            num_hidden_layers=1,
            seed=0,
            extra_corpus=[e.prompt + " " + e.chosen + " " + e.rejected for e in examples(1)],
        )
    return path


def build_all(out: Path, n_per_task: int = 1) -> dict[str, Path]:
    """media/, prefs/ (save_to_disk) and model/ under ``out``; reuses what an earlier call wrote there."""
    write_clips(out / "media")
    if not (out / "prefs" / "dataset_info.json").exists():
        dataset(n_per_task).save_to_disk(str(out / "prefs"))
    return {"media": out / "media", "prefs": out / "prefs", "model": tiny_model(out / "model")}


def shared(tmp_path_factory) -> dict[str, Path]:
    """One set of inputs per pytest session, shared by the trainer test files."""
    return build_all(tmp_path_factory.getbasetemp() / "cavpref_trainer_inputs", n_per_task=1)


if __name__ == "__main__":
    build_all(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1)
