"""The benchmarks, one module per command (``scripts/bench_<module>.py``); their shared row and step helpers
are the product's ``cavpref.bench``."""
