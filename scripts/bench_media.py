"""``python scripts/bench_media.py``: the command of ``cavpref_lab/bench/media.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.bench.media import main

if __name__ == "__main__":
    sys.exit(main())
