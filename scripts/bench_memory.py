"""``python scripts/bench_memory.py``: the command of ``cavpref_lab/bench/memory.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.bench.memory import main

if __name__ == "__main__":
    sys.exit(main())
