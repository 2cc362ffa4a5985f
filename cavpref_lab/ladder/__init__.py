"""The learnability ladder's helpers (``scripts/ladder.py``, ``ladder_report.py``, ``ladder_diagnose.py``): its
training rows (``rows``) and the per-item abstention margins read back from an evaluation (``margins``). A
package, not files of ``scripts/``: every ``scripts/*.py`` is a command with its own ``main``."""
