"""Pieces the benchmark scripts (``scripts/bench_*.py``), the GPU check (``scripts/gpu_check.py``) and
``cavpref check`` share: ``rows`` (every task's preference rows, their clips, realistic-size media), ``steps``
(one timed, measured trainer step), ``probes`` (what a step is observed by: recorded log-probs, logged warnings,
profiled attention ops) and ``agreement`` (how far two log-prob vectors or two gradients are apart)."""
