"""The nine generators over this shard's records, in ``num_proc`` forked workers, sorted by id."""

from __future__ import annotations

import multiprocessing
import os
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from cavpref.data_prep.build.config import PrepConfig
from cavpref.data_prep.build.splits import in_shard, split_of_paths
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks import generate_all, make_context
from cavpref.data_prep.tasks.common import stable_hash
from cavpref.data_prep.tasks.context import clip_id
from cavpref.safety import die_with_parent

_WORK: dict[str, Any] = {}  # inherited by forked workers: the context is built once, in the parent


def _generate_part(part: int) -> tuple[list, list, dict]:
    ctx, config, tables = _WORK["ctx"], _WORK["config"], _WORK["tables"]
    n = config.num_proc

    def select(r: QARecord) -> bool:
        return in_shard(r, config) and (n == 1 or stable_hash("proc", r.key) % n == part)

    return generate_all(
        ctx.records,
        tables,
        seed=config.seed,
        tasks=config.tasks,
        settings=config.settings,
        context=ctx,
        select=select,
    )


def generate(records: list[QARecord], tables, config: PrepConfig) -> tuple[list, list, dict[str, Counter]]:
    """All configured tasks for this shard's records, over ``num_proc`` forked workers; sorted by id."""
    ctx = make_context(
        records,
        tables,
        seed=config.seed,
        options=config.task_options(),
        partner_key=lambda r: split_of_paths(clip_id(r).split("|"), config),
        ontology=config.audioset_ontology,
    )
    _WORK.update(ctx=ctx, config=config, tables=tables)
    try:
        if config.num_proc > 1:
            with ProcessPoolExecutor(
                config.num_proc,
                mp_context=multiprocessing.get_context("fork"),
                initializer=die_with_parent,
                initargs=(os.getpid(),),
            ) as pool:
                parts = list(pool.map(_generate_part, range(config.num_proc)))
        else:
            parts = [_generate_part(0)]
    finally:
        _WORK.clear()
    items = sorted((i for p in parts for i in p[0]), key=lambda x: x.id)
    prefs = sorted((x for p in parts for x in p[1]), key=lambda x: x.id)
    skips = {t: sum((p[2][t] for p in parts), Counter()) for t in config.tasks}
    return items, prefs, skips
