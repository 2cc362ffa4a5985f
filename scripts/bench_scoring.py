"""``python scripts/bench_scoring.py``: the command of ``cavpref_lab/bench/scoring.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.bench.scoring import main

if __name__ == "__main__":
    sys.exit(main())
