"""The data folder of the other stage (issue 54 #9): training pointed at a prep folder is told to use its
``preferences/``; the evaluation pointed at ``preferences/`` is told it is a preference folder and what it
reads — not datasets' "neither a Dataset nor a DatasetDict directory" or six missing fields per row."""

from __future__ import annotations

import pytest
import yaml

from cavpref.apps.cli import main as cavpref
from cavpref.data_prep.build import PrepConfig, build
from cavpref.eval.benchmarks.avtrustbench.reader import DataError, load_items
from cavpref.train import load_preferences
from tests.helpers import trainer_fixtures as F


@pytest.fixture(scope="module")
def prep(small_world, tmp_path_factory):
    out = tmp_path_factory.mktemp("kinds") / "data"
    build(PrepConfig(world=str(small_world), output_dir=str(out), tasks=["MCIT", "CLEAN"], progress=False))
    return out


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    return F.shared(tmp_path_factory)


def test_a_prep_folder_as_train_dataset_points_at_its_preferences(prep):
    with pytest.raises(ValueError) as err:
        load_preferences(str(prep), "train")
    assert str(err.value) == (
        f"train_dataset '{prep}' is a `cavpref prep` folder: pass its preferences, --train_dataset "
        f"{prep / 'preferences'}"
    )
    assert len(load_preferences(str(prep / "preferences"), "train")) > 0  # what it names trains


def test_a_folder_that_holds_no_dataset_says_what_train_dataset_is(small_world):
    with pytest.raises(ValueError, match=r"not a `datasets` folder \(no dataset_dict.json or state.json\)"):
        load_preferences(str(small_world), "train")


def test_cavpref_train_with_the_prep_folder_is_one_line(fx, prep, tmp_path, capsys):
    rec = tmp_path / "r.yaml"
    cfg = {"method": "dpo", "train_dataset": str(prep), "media_root": str(fx["media"])}
    rec.write_text(yaml.safe_dump({**cfg, "model_name_or_path": str(fx["model"]), "use_cpu": True}))
    assert cavpref(["train", str(rec), "--output_dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"--train_dataset {prep / 'preferences'}" in err and err.count("\n") == 1


@pytest.mark.parametrize("sub", ["preferences", "preferences/train"])
def test_eval_on_preference_rows_says_what_it_reads(prep, sub):
    with pytest.raises(DataError) as err:
        load_items(prep / sub)
    message = str(err.value)
    assert (
        "this is a preference folder (chosen / rejected training rows); eval reads the benchmark items"
        in message
    )
    if sub == "preferences":
        assert message.endswith(f"--data {prep}")
    assert len(load_items(prep).items) > 0  # what it names evaluates


def test_cavpref_eval_on_preference_rows_is_one_line(fx, prep, tmp_path, capsys):
    argv = ["eval", "avtrustbench", "--model", str(fx["model"]), "--data", str(prep / "preferences")]
    assert cavpref([*argv, "--output", str(tmp_path / "e")]) == 2
    err = capsys.readouterr().err
    assert "this is a preference folder" in err and "missing field" not in err and err.count("\n") == 1
