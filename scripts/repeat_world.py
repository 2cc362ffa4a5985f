"""``python scripts/repeat_world.py``: the command of ``cavpref_lab/science/repeat_world.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.science.repeat_world import main

if __name__ == "__main__":
    sys.exit(main())
