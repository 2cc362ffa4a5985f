"""``python scripts/ladder_diagnose.py``: the command of ``cavpref_lab/ladder/diagnose.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.ladder.diagnose import main

if __name__ == "__main__":
    sys.exit(main())
