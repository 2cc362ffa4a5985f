"""``python scripts/world_across_cpus.py``: the command of ``cavpref_lab/science/world_across_cpus.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.science.world_across_cpus import main

if __name__ == "__main__":
    sys.exit(main())
