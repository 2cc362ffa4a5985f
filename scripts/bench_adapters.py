"""``python scripts/bench_adapters.py``: the command of ``cavpref_lab/bench/adapters.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.bench.adapters import main

if __name__ == "__main__":
    sys.exit(main())
