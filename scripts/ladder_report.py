"""``python scripts/ladder_report.py``: the command of ``cavpref_lab/ladder/report.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.ladder.report import main

if __name__ == "__main__":
    sys.exit(main())
