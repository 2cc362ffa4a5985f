"""The public API of ``cavpref`` (docs/training.md's Python example itself runs in tests/docs/test_docs_examples.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_public_api_from_the_top_level():
    import cavpref
    from cavpref import CAVPrefTrainer
    from cavpref.trainer import CAVPrefTrainer as same

    assert CAVPrefTrainer is same
    for name in cavpref.__all__:
        assert getattr(cavpref, name) is not None, name


def test_import_cavpref_is_cheap_and_eval_does_not_load_trl():
    probe = (
        "import sys, cavpref; assert 'torch' not in sys.modules and 'trl' not in sys.modules, 1;"
        "import cavpref.eval; assert 'trl' not in sys.modules, 2"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, cwd=ROOT)
