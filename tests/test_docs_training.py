"""docs/training.md starts with a Python example of CAVPrefTrainer: run that exact block (paths pointed at the
tiny offline model and data the trainer tests build), and check the public API imports from ``cavpref``."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import test_trainer_fixtures as F

ROOT = Path(__file__).resolve().parents[1]


def doc_example() -> str:
    text = (ROOT / "docs" / "training.md").read_text()
    first = re.search(r"```python\n(.*?)```", text, re.DOTALL)
    assert first and text.index("```python") < text.index("\n## "), "the Python example must come first"
    return first.group(1)


def test_training_doc_example_runs(tmp_path_factory, tmp_path, capsys):
    fx = F.shared(tmp_path_factory)
    code = doc_example()
    for old, new in (
        ("runs/tiny/model", fx["model"]),
        ("runs/tiny/prefs", fx["prefs"]),
        ("runs/tiny/world", fx["media"]),
        ("runs/tiny/python", tmp_path / "out"),
    ):
        assert old in code, old
        code = code.replace(old, str(new))
    scope: dict = {}
    exec(compile(code, "docs/training.md", "exec"), scope)  # noqa: S102 - the project's own doc
    trainer = scope["trainer"]
    assert trainer.state.global_step == 2
    assert "step 1 loss:" in capsys.readouterr().out
    losses = [r["loss"] for r in trainer.state.log_history if "loss" in r]
    assert len(losses) == 2 and all(math.isfinite(v) for v in losses)


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
