"""`accelerate launch [--config_file recipes/accelerate/<x>.yaml] scripts/train.py recipes/<recipe>.yaml [overrides]`

A thin wrapper over ``cavpref.apps.train.main`` (the same code as ``cavpref train``), so the accelerate launcher can
start one process per device.
"""

import sys

from cavpref.apps.train import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
