"""``cavpref prep CONFIG.yaml``: source annotations -> AVTrustBench items + CAVPref preference data.

read (data_prep.readers) -> single-modality filter (paper A.1) -> T1/T2/T3 tables (+ user override) ->
validation -> the nine generators (data_prep.tasks) -> leak-free train/test split by source clip ->
optional similarity scores (data_prep.scoring) -> HF ``datasets`` (Arrow + Parquet) + JSONL + stats.

One module per job: ``config`` (PrepConfig), ``fingerprint`` (up-to-date check), ``reading`` (sources and
validation), ``splits`` (clip -> split, record -> shard), ``generate`` (the generators over workers),
``stats`` (accounting and summary), ``merge`` (shards -> one build), ``pipeline`` (``build``: runs them),
``rotation`` (training rows under CircularEval rotations), ``distributed`` (one shard per ``accelerate
launch`` process, then the merge).

Why it is shaped like this:

- *Reproducible and shardable.* Every choice is seeded per record (data_prep.tasks.common), partners are
  drawn from the global record pool, and rows are written sorted by id, so a shard only changes *which*
  records it generates for: merging the shards gives exactly the single-process build, in any order.
- *No split leak.* A clip is in train or test by a hash of its path; partners are drawn from the same
  side, and an item whose clips still straddle (several clips of its own) is dropped and counted.
- *Nothing recomputed needlessly.* The output's manifest holds a fingerprint of the config, the bytes of
  every input file and the code of this stage; an identical second run says so and does nothing.
- *Every record accounted for.* read = kept + reader skips + single-modality exclusions + invalid; per
  task eligible = generated + skipped; all in ``stats.json``.
"""

from cavpref.data_prep.build.config import SPLITS, WORLD_LAYOUT, PrepConfig
from cavpref.data_prep.build.distributed import build_distributed
from cavpref.data_prep.build.fingerprint import BUILD_VERSION, code_sha256, fingerprint
from cavpref.data_prep.build.merge import merge
from cavpref.data_prep.build.pipeline import build
from cavpref.data_prep.build.reading import PrepError, read_records, validate
from cavpref.data_prep.build.splits import assign_splits, in_shard, split_of_path, split_of_paths
from cavpref.data_prep.build.stats import format_stats

__all__ = [
    "BUILD_VERSION",
    "SPLITS",
    "WORLD_LAYOUT",
    "PrepConfig",
    "PrepError",
    "assign_splits",
    "build",
    "build_distributed",
    "code_sha256",
    "fingerprint",
    "format_stats",
    "in_shard",
    "merge",
    "read_records",
    "split_of_path",
    "split_of_paths",
    "validate",
]
