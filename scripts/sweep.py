"""``python scripts/sweep.py``: the command of ``cavpref_lab/sweep.py`` (its docstring is the manual)."""

import sys

from cavpref_lab.sweep import main

if __name__ == "__main__":
    sys.exit(main())
