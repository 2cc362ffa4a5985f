"""``python scripts/real_media_inputs.py``: the command of ``cavpref_lab/science/real_media_inputs.py``
(its docstring is the manual)."""

import sys

from cavpref_lab.science.real_media_inputs import main

if __name__ == "__main__":
    sys.exit(main())
