"""The public API of ``cavpref`` (docs/training.md's Python example itself runs in tests/test_docs_examples.py)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]


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


def test_deprecated_names_warn_and_are_the_same_objects():
    from cavpref import deprecation, models
    from cavpref.models import config as model_config

    pairs = [
        ("AVAdapter", "AVModelIO"),
        ("load_adapter", "load_model_io"),
        ("register_adapter", "register_model_io"),
        ("ChatAdapter", "ChatModelIO"),
        ("QwenOmniAdapter", "QwenOmniModelIO"),
        ("ComposedAVAdapter", "ComposedAVModelIO"),
        ("ModelConfig", "AVModelArguments"),
    ]
    for old, new in pairs:
        deprecation._warned.discard(old)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert getattr(models, old) is getattr(models, new), old
        assert any(issubclass(w.category, FutureWarning) and new in str(w.message) for w in caught), old
    deprecation._warned.discard("ModelConfig")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert model_config.ModelConfig is model_config.AVModelArguments
    assert any("AVModelArguments" in str(w.message) for w in caught)


def test_every_module_alias_warns_once_and_resolves(recwarn):
    """The per-module aliases (one ``deprecated_aliases`` each) resolve to the new object and warn."""
    from cavpref import deprecation
    from cavpref.models import base, chat, composed_io, qwen_omni, registry

    for module, old, new in (
        (base, "AVAdapter", "AVModelIO"),
        (chat, "ChatAdapter", "ChatModelIO"),
        (qwen_omni, "QwenOmniAdapter", "QwenOmniModelIO"),
        (composed_io, "ComposedAVAdapter", "ComposedAVModelIO"),
        (registry, "load_adapter", "load_model_io"),
    ):
        deprecation._warned.discard(f"{module.__name__}.{old}")
        assert getattr(module, old) is getattr(module, new)
        assert any(new in str(w.message) for w in recwarn.list)
    import pytest

    with pytest.raises(AttributeError, match="no attribute"):
        chat.NotAName  # noqa: B018
