"""``python scripts/bench_shared_prefix.py``: the command of ``cavpref_lab/bench/shared_prefix.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.bench.shared_prefix import main

if __name__ == "__main__":
    sys.exit(main())
