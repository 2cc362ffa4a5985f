"""``python scripts/bench_trust_eval.py``: the command of ``cavpref_lab/bench/trust_eval.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.bench.trust_eval import main

if __name__ == "__main__":
    sys.exit(main())
