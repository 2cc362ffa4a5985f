"""``python scripts/bench_eval.py``: the command of ``cavpref_lab/bench/eval.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.bench.eval import main

if __name__ == "__main__":
    sys.exit(main())
