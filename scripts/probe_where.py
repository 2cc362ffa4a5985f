"""``python scripts/probe_where.py``: the command of ``cavpref_lab/science/probe_where.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.science.probe_where import main

if __name__ == "__main__":
    sys.exit(main())
