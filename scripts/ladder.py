"""``python scripts/ladder.py``: the command of ``cavpref_lab/ladder/plan.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.ladder.plan import main

if __name__ == "__main__":
    sys.exit(main())
