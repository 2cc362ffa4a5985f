"""The trainer tests' fixtures: the tiny model's I/O and the preference rows of the shared inputs (``fx``,
tests/conftest.py), one each per session."""

import pytest


@pytest.fixture(scope="session")
def model_io(fx):
    from cavpref.models import AVModelArguments, load_model_io

    return load_model_io(AVModelArguments(model_name_or_path=str(fx["model"]), dtype="float32"))


@pytest.fixture(scope="session")
def prefs(fx):
    from datasets import load_from_disk

    return load_from_disk(str(fx["prefs"]))
