"""``python scripts/bench_threads.py``: the command of ``cavpref_lab/bench/threads.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.bench.threads import main

if __name__ == "__main__":
    sys.exit(main())
