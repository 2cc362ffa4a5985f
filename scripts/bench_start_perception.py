"""``python scripts/bench_start_perception.py``: the command of ``cavpref_lab/bench/start_perception.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.bench.start_perception import main

if __name__ == "__main__":
    sys.exit(main())
