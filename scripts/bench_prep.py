"""``python scripts/bench_prep.py``: the command of ``cavpref_lab/bench/prep.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.bench.prep import main

if __name__ == "__main__":
    sys.exit(main())
