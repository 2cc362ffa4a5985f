"""``python scripts/gpu_check.py``: the command of ``cavpref_lab/gpu_check.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.gpu_check import main

if __name__ == "__main__":
    sys.exit(main())
