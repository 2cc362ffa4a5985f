"""``python scripts/bench_trainer.py``: the command of ``cavpref_lab/bench/trainer.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.bench.trainer import main

if __name__ == "__main__":
    sys.exit(main())
