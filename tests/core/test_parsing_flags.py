"""Command-line keys are spelled in full (issue 54 #10): argparse's prefix matching took ``--max_step 2`` as
``max_steps``, though an unknown key is an error; ``cavpref train --help`` lists the TrainingArguments keys
every recipe sets."""

from __future__ import annotations

import pytest

from cavpref.apps.cli import main as cli_main
from cavpref.apps.quickstart import QuickstartConfig
from cavpref.config import CAVPrefConfig
from cavpref.data_prep.build.config import PrepConfig
from cavpref.data_prep.synthetic.config import WorldConfig
from cavpref.eval.cli import CompareArgs
from cavpref.models.export import ExportModelArgs
from cavpref.parsing import parse_args


def test_train_refuses_an_abbreviated_key_with_one_line_naming_the_full_one(tmp_path, capsys):
    recipe = tmp_path / "r.yaml"
    recipe.write_text("method: dpo\n")
    assert cli_main(["train", str(recipe), "--output_dir", str(tmp_path / "o"), "--max_step", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cavpref train: error: unknown key --max_step (did you mean --max_steps?)"), err
    assert err.count("\n") == 1 and not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "types, argv, key",
    [
        ([QuickstartConfig], ["--see", "3"], "--see"),  # a prefix of --seed
        ([WorldConfig], ["--out", "w", "--num_clip", "3"], "--num_clip"),
        ([PrepConfig], ["--worl", "w"], "--worl"),
        ([ExportModelArgs], ["--output_d", "o"], "--output_d"),
        ([CompareArgs], ["--run", "a", "b"], "--run"),
        ([CAVPrefConfig], ["--learning_r", "0.1"], "--learning_r"),
        ([CAVPrefConfig], ["--learning_r=0.1"], "--learning_r"),
    ],
)
def test_no_command_takes_a_prefix_of_a_key(types, argv, key):
    with pytest.raises(ValueError, match=rf"unknown key {key} \(did you mean"):
        parse_args(types, argv, prog="cavpref x")


def test_a_key_spelled_in_full_still_parses():
    (cfg,) = parse_args([WorldConfig], ["--out", "w", "--num_clips=3"], prog="cavpref world")
    assert cfg.num_clips == 3 and cfg.out == "w"


def test_train_help_lists_the_training_arguments_a_recipe_sets(capsys):
    with pytest.raises(SystemExit):
        cli_main(["train", "--help"])
    out = capsys.readouterr().out
    for key in (
        "learning_rate",
        "output_dir",
        "max_steps",
        "per_device_train_batch_size",
        "save_steps",
        "seed",
    ):
        assert f"\n  --{key} " in out, key
    assert "--help_all" in out and "\n  --adam_beta1 " not in out  # the rest stay behind --help_all
