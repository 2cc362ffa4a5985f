"""``python scripts/bench_longvideo.py``: the command of ``cavpref_lab/bench/longvideo.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.bench.longvideo import main

if __name__ == "__main__":
    sys.exit(main())
