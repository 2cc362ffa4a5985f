"""The models tests' fixtures."""

import pytest


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from cavpref.models import build_tiny_qwen_omni

    return build_tiny_qwen_omni(tmp_path_factory.mktemp("tiny"))
