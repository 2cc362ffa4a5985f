"""The learnability ladder (issue 38), one module per job: ``config`` (``LadderConfig``, the methods and the
mixes), ``plan`` (the stages and the runner: ``scripts/ladder.py``), ``rows`` (its training rows), ``margins``
(the per-item abstention margins read back from an evaluation), ``report`` (tables and plots:
``scripts/ladder_report.py``) and ``diagnose`` (``scripts/ladder_diagnose.py``). ``config`` stands alone so
that ``plan`` and ``report`` both read it without importing each other."""
