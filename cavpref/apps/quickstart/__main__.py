"""``python -m cavpref.apps.quickstart`` is ``cavpref quickstart``."""

import sys

from cavpref.apps.quickstart.pipeline import main

sys.exit(main())
