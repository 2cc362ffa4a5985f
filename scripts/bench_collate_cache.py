"""``python scripts/bench_collate_cache.py``: the command of ``cavpref_lab/bench/collate_cache.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.bench.collate_cache import main

if __name__ == "__main__":
    sys.exit(main())
