"""``python scripts/quickstart_science.py``: the command of ``cavpref_lab/science/quickstart_science.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.science.quickstart_science import main

if __name__ == "__main__":
    sys.exit(main())
