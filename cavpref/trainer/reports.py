"""What a run did not train on, written next to its checkpoints: skipped rows and rows missing a stream.

Both lists are gathered over all ranks and de-duplicated, then written by the main process, so a user reads one
file per run (and a count in the logs) instead of a warning per rank and batch.
"""

from __future__ import annotations

import json
import os

from accelerate.utils import gather_object
from transformers.utils import logging

logger = logging.get_logger(__name__)


def _all_ranks(accelerator, items: list) -> list:
    return gather_object(list(items)) if accelerator.num_processes > 1 else list(items)


def write_skipped(accelerator, output_dir: str, skipped: list, skip_bad_rows: bool) -> list[tuple[str, str]]:
    """``output_dir/skipped_rows.json``: every (example id, reason) skipped (written whenever skipping is on)."""
    unique = list(dict.fromkeys((str(i), str(r)) for i, r in _all_ranks(accelerator, skipped)))
    if accelerator.is_main_process and (unique or skip_bad_rows):
        os.makedirs(output_dir, exist_ok=True)
        with open(os.path.join(output_dir, "skipped_rows.json"), "w") as f:
            json.dump(
                {"count": len(unique), "rows": [{"id": i, "reason": r} for i, r in unique]}, f, indent=1
            )
        if unique:
            logger.warning(f"skipped {len(unique)} bad rows (see {output_dir}/skipped_rows.json)")
    return unique


def write_missing_streams(accelerator, output_dir: str, missing: list) -> dict[str, dict[str, int]]:
    """``output_dir/missing_streams.json``: examples trained without a stream their file lacks, per task and
    stream (``missing_stream: error`` refuses them instead)."""
    unique = sorted({tuple(map(str, m)) for m in _all_ranks(accelerator, missing)})
    per_task: dict[str, dict[str, int]] = {}
    for _, task, stream in unique:
        per_task.setdefault(task, {}).setdefault(stream, 0)
        per_task[task][stream] += 1
    if accelerator.is_main_process:
        os.makedirs(output_dir, exist_ok=True)
        count = len({i for i, _, _ in unique})
        with open(os.path.join(output_dir, "missing_streams.json"), "w") as f:
            json.dump(
                {
                    "count": count,
                    "per_task": per_task,
                    "examples": [{"id": i, "task": t, "stream": s} for i, t, s in unique],
                },
                f,
                indent=1,
            )
        if unique:
            logger.warning(
                f"trained {count} examples with a missing stream {per_task} (see "
                f"{output_dir}/missing_streams.json; missing_stream: error refuses them)"
            )
    return per_task
