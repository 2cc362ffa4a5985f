"""One folder per benchmark (``cavpref.eval.registry`` imports each on the first lookup).

Each folder holds everything that is the benchmark's own — the reader of its released format, prompt,
scorer, metrics, report section, external-predictions format, its keys (``Options``) and its test
fixtures — and registers one ``cavpref.eval.registry.Benchmark`` subclass in its ``__init__.py``.
Adding a benchmark is adding a folder here (docs/evaluation.md, "Adding a benchmark").
"""
