"""``PreferenceBatchSampler``: deterministic optimizer batches, mixed or one task per batch (the paper's regime)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import torch


class PreferenceBatchSampler:
    """Per-device micro-batches that add up to deterministic *optimizer* batches.

    The sampler first forms optimizer batches of ``batch_size * world_size * accumulation_steps`` samples,
    then cuts each into ``accumulation_steps`` rounds of ``world_size`` consecutive per-device batches;
    accelerate's ``BatchSamplerShard`` hands batch ``k`` to rank ``k % world_size``, and each rank's
    ``accumulation_steps`` consecutive batches form its share of one optimizer step. So every split of the
    same optimizer batch size (8 x 1, 1 x 8, 2 x 4, 2 ranks x 1 x 4) sees exactly the same samples in each
    optimizer step — what makes the optimizer-batch loss (means, robust normaliser, β min-max) reproducible.

    ``mode="mixed"``: one seeded permutation of all samples. ``mode="task_homogeneous"``: each optimizer
    batch holds one task (the paper's regime); the order of the batches is shuffled. An incomplete last
    batch (per task in homogeneous mode) is dropped with ``drop_last``, else filled by wrapping around its
    pool, as ``DistributedSampler`` does.
    """

    def __init__(
        self,
        tasks: Sequence[str],
        batch_size: int,
        *,
        world_size: int = 1,
        mode: str = "mixed",
        seed: int = 0,
        drop_last: bool = False,
        shuffle: bool = True,
        accumulation_steps: int = 1,
    ):
        if mode not in ("mixed", "task_homogeneous"):
            raise ValueError(f"sampler mode must be 'mixed' or 'task_homogeneous', got {mode!r}")
        if batch_size < 1 or world_size < 1 or accumulation_steps < 1:
            raise ValueError(
                "batch_size, world_size and accumulation_steps must be >= 1, got "
                f"{batch_size}, {world_size}, {accumulation_steps}"
            )
        self.accumulation_steps = accumulation_steps
        self.tasks = list(tasks)
        self.batch_size, self.world_size, self.mode = batch_size, world_size, mode
        self.seed, self.drop_last, self.shuffle = seed, drop_last, shuffle
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        self.epoch = int(epoch)

    def _pools(self, gen: torch.Generator) -> list[list[int]]:
        if self.mode == "mixed":
            pools = [list(range(len(self.tasks)))]
        else:
            by_task: dict[str, list[int]] = {}
            for i, t in enumerate(self.tasks):
                by_task.setdefault(t, []).append(i)
            pools = [by_task[t] for t in sorted(by_task)]
        if self.shuffle:
            pools = [[p[j] for j in torch.randperm(len(p), generator=gen).tolist()] for p in pools]
        return pools

    def global_batches(self) -> list[list[int]]:
        gen = torch.Generator().manual_seed(self.seed + self.epoch)
        size = self.batch_size * self.world_size * self.accumulation_steps
        batches = []
        for pool in self._pools(gen):
            for start in range(0, len(pool), size):
                chunk = pool[start : start + size]
                if len(chunk) < size:
                    if self.drop_last:
                        continue
                    while len(chunk) < size:  # wrap around (pool may be smaller than a batch)
                        chunk += pool[: size - len(chunk)]
                batches.append(chunk)
        if self.shuffle and self.mode == "task_homogeneous":
            batches = [batches[j] for j in torch.randperm(len(batches), generator=gen).tolist()]
        return batches

    def __iter__(self):
        for chunk in self.global_batches():  # one optimizer batch
            for k in range(self.world_size * self.accumulation_steps):  # micro-batch k // W of rank k % W
                yield chunk[k * self.batch_size : (k + 1) * self.batch_size]

    def __len__(self) -> int:
        size = self.batch_size * self.world_size * self.accumulation_steps
        if self.mode == "mixed":
            counts = [len(self.tasks)]
        else:
            counts = list(Counter(self.tasks).values())
        n = sum((c // size) if self.drop_last else math.ceil(c / size) for c in counts)
        return n * self.world_size * self.accumulation_steps
