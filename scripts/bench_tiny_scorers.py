"""``python scripts/bench_tiny_scorers.py``: the command of ``cavpref_lab/bench/tiny_scorers.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.bench.tiny_scorers import main

if __name__ == "__main__":
    sys.exit(main())
