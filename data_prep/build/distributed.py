"""Prep across processes / GPUs: ``accelerate launch`` runs one shard per process, then the merge.

    accelerate launch --num_processes 8 -m cavpref.data_prep.cli my.yaml        # 8 GPUs
    accelerate launch --config_file recipes/accelerate/cpu_2proc.yaml -m cavpref.data_prep.cli my.yaml
                                        # 2 CPU processes (torchrun launcher, no GPU visible: accelerate 1.15
                                        # starts ONE process for --cpu unless MPI is set up)

Process ``i`` of ``n`` (accelerate's ``PartialState``: its process index and count, whatever launched it)
builds shard ``i`` of ``n`` — reading, generation and the CLAP / CLIP / AVSM scoring of that shard's rows,
on its own device — into ``<output_dir>/shards/shard-<i>-of-<n>``; after a barrier the main process merges
the shards into ``output_dir`` (``merge``), which equals the one-process build byte for byte (rows are
seeded per record and written sorted by id; ``tests/data_prep/test_prep_distributed.py``). One process (plain
``cavpref prep``) is the ordinary ``build``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from transformers.utils import logging

from cavpref.data_prep.build.config import PrepConfig
from cavpref.data_prep.build.merge import merge
from cavpref.data_prep.build.pipeline import build
from cavpref.data_prep.tables import DEFAULT_FILENAME
from cavpref.output_dir import claim_output_dir, release_output_dir

logger = logging.get_logger(__name__)


def shard_dir(output_dir: str | Path, index: int, count: int) -> Path:
    return Path(output_dir) / "shards" / f"shard-{index}-of-{count}"


def build_distributed(config: PrepConfig) -> dict[str, Any]:
    """``build`` when this is the only process, else this process's shard, a barrier and (on the main
    process) the merge. Returns the merged stats on the main process, the shard's on the others."""
    import torch
    from accelerate import PartialState

    # cpu=True without CUDA: accelerate then reads the launcher's WORLD_SIZE / RANK (gloo); otherwise it
    # would see one process per CPU rank
    state = PartialState(cpu=not torch.cuda.is_available())
    if state.num_processes == 1:
        return build(config)
    if config.num_shards != 1:
        raise ValueError(
            f"PrepConfig.num_shards={config.num_shards}: under accelerate launch every process is one "
            f"shard ({state.num_processes} processes); leave num_shards at 1"
        )
    if not config.output_dir:
        raise ValueError("PrepConfig.output_dir is required")
    if state.device.type == "cuda":  # a scorer on "cuda" then uses this process's own GPU
        torch.cuda.set_device(state.device)
    # the folder is claimed (checked, marked and locked by the main process) before any shard writes into it
    out = claim_output_dir(
        config.output_dir, "prep", overwrite=config.overwrite_output_dir, markers=(DEFAULT_FILENAME,)
    )
    state.wait_for_everyone()
    config = dataclasses.replace(config, output_dir=out)
    n, i = state.num_processes, state.process_index
    mine = dataclasses.replace(
        config,
        output_dir=str(shard_dir(config.output_dir, i, n)),
        num_shards=n,
        shard_index=i,
        progress=config.progress and state.is_main_process,
    )
    logger.info("prep: process %d of %d builds shard %s", i, n, mine.output_dir)
    stats = build(mine)
    state.wait_for_everyone()
    if state.is_main_process:
        stats = merge(config.output_dir, [str(shard_dir(config.output_dir, j, n)) for j in range(n)])
        stats["up_to_date"] = False
    state.wait_for_everyone()
    release_output_dir(out)
    # the build is the whole command: a gloo group left to interpreter teardown aborts a rank now and then
    # ("terminate called without an active exception"), so it ends here, as `cavpref train`'s does
    state.destroy_process_group()
    return stats
