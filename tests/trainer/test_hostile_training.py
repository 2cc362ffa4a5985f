"""Hostile-input pass two, training (issue 40 #12-#16, #26): value domains of the loss keys, resume identity,
the held-out split, empty / degenerate data. One-line errors from ``cavpref train``; real tiny runs where a
checkpoint is needed."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from cavpref.train import main
from tests.helpers.train_recipes import checkpointed_recipe as recipe


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    return err[-1] if err else ""


@pytest.mark.parametrize(
    "overrides, words",
    [
        ({"method": "dpo", "beta": -0.1}, "CAVPrefConfig.beta must be finite and > 0, got -0.1"),
        ({"method": "dpo", "beta": 0.0}, "CAVPrefConfig.beta must be finite and > 0, got 0.0"),
        ({"method": "dpo", "beta": float("nan")}, "CAVPrefConfig.beta must be finite and > 0, got nan"),
        (
            {"lambda_y": float("inf")},
            "CAVPrefConfig.lambda_y must be finite and > 0, got inf; the plain mean",
        ),
        ({"beta_offset": float("nan")}, "CAVPrefConfig.beta_offset must be finite and >= 0, got nan"),
        (
            {"beta_y": float("nan")},
            "CAVPrefConfig.beta_y must be finite and > 0 or unset (calibrated), got nan",
        ),
        ({"max_steps": 0}, "CAVPrefConfig.max_steps 0 trains nothing"),
        ({"max_train_samples": 0}, "DataArguments.max_train_samples must be >= 1 or unset (all rows), got 0"),
    ],
)
def test_loss_keys_outside_their_domain_are_refused(fx, tmp_path, capsys, overrides, words):
    """Case 12 (and 26's NaN beta, 16's max_steps 0 / max_train_samples 0): DPO took beta -0.1 (learning to
    prefer the rejected answers), 0 or NaN; lambda inf made the loss NaN, logged as 0.0; NaN beta_offset blamed
    every data row; max_steps 0 ran a step and saved; max_train_samples 0 ended in a bare StopIteration."""
    rec = recipe(fx, tmp_path / "r.yaml", **overrides)
    assert main([str(rec), "--output_dir", str(tmp_path / "run")]) == 2
    assert words in _error(capsys)
    assert not (tmp_path / "run").exists()  # refused before anything was written


def _copy_prefs(fx, path, change):
    from datasets import load_from_disk

    rows = load_from_disk(str(fx["prefs"])).to_list()
    change(rows)
    from datasets import Dataset

    Dataset.from_list(rows).save_to_disk(str(path))
    return path


def test_a_row_whose_chosen_equals_rejected_is_unusable(fx, tmp_path, capsys):
    """Case 16: such a row has no preference (zero gradient, the loss stays at log 2); it was accepted."""

    def same(rows):
        rows[0]["rejected"] = rows[0]["chosen"]

    data = _copy_prefs(fx, tmp_path / "prefs", same)
    rec = recipe(fx, tmp_path / "r.yaml", method="dpo", train_dataset=str(data), save_strategy="no")
    assert main([str(rec), "--output_dir", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "1 unusable rows of 9" in err and "rows y_w and y_l are the same ('chosen' == 'rejected')" in err


def test_a_benchmark_folder_as_train_dataset_says_so(fx, tmp_path, capsys):
    """Case 26: a train_dataset pointing at prep's benchmark folder listed 144 'missing prompt/chosen' rows."""
    from datasets import Dataset

    from cavpref.data import BenchmarkItem

    item = BenchmarkItem(
        "b1", "CAT", "avqa", "Count", "How many?", {"A": "one", "B": "two"}, "A", "base", 0, None
    )
    Dataset.from_list([item.to_row()]).save_to_disk(str(tmp_path / "benchmark"))
    rec = recipe(fx, tmp_path / "r.yaml", train_dataset=str(tmp_path / "benchmark"))
    assert main([str(rec), "--output_dir", str(tmp_path / "run")]) == 2
    assert "holds benchmark items (columns question, option_letters, answer), not preference rows" in _error(
        capsys
    )


def test_training_on_prep_held_out_test_split_is_refused(fx, tmp_path, capsys):
    """Case 15: `train_split: test` trained on the held-out test clips with no warning."""
    from datasets import DatasetDict, load_from_disk

    rows = load_from_disk(str(fx["prefs"]))
    DatasetDict({"train": rows, "test": rows}).save_to_disk(str(tmp_path / "preferences"))
    (tmp_path / "manifest.json").write_text(json.dumps({"config": {"test_fraction": 0.2}}))
    rec = recipe(fx, tmp_path / "r.yaml", train_dataset=str(tmp_path / "preferences"), train_split="test")
    assert main([str(rec), "--output_dir", str(tmp_path / "run")]) == 2
    assert "train_split 'test'" in (err := _error(capsys)) and "held these clips out for evaluation" in err


def test_a_batch_larger_than_the_data_is_named(fx, tmp_path, caplog):
    """Case 16: an optimizer batch larger than the dataset repeated rows silently (a warning now)."""
    from cavpref.train import check_paths, parse

    rec = recipe(fx, tmp_path / "r.yaml", max_train_samples=3)
    check_paths(*parse([str(rec), "--output_dir", str(tmp_path / "run")]))
    assert "3 training rows but 4 per optimizer step" in caplog.text


def test_resume_never_silently_starts_over_nor_takes_another_runs_checkpoint(fx, tmp_path, capsys):
    """Cases 13 and 14: `resume_from_checkpoint last` with only a half-written checkpoint, or in a mistyped
    folder, restarted from step 1; an SFT run's checkpoint resumed a DPO run without complaint."""
    sft = tmp_path / "sft"
    rec = recipe(fx, tmp_path / "r.yaml", method="sft")
    assert main([str(rec), "--output_dir", str(sft)]) == 0
    assert (sft / "checkpoint-1" / "trainer_state.json").is_file()
    capsys.readouterr()
    # 14: nothing to resume in a mistyped folder; a mistyped checkpoint path
    assert main([str(rec), "--output_dir", str(tmp_path / "typo"), "--resume_from_checkpoint", "last"]) == 2
    assert "resume_from_checkpoint last: no checkpoint there (a mistyped output_dir?)" in _error(capsys)
    missing = str(sft / "checkpoint-9")
    assert main([str(rec), "--output_dir", str(sft), "--resume_from_checkpoint", missing]) == 2
    assert "not a complete checkpoint (no trainer_state.json there)" in _error(capsys)
    # 14: only a half-written checkpoint (killed while saving)
    half = tmp_path / "half"
    shutil.copytree(sft, half)
    state = half / "checkpoint-1" / "trainer_state.json"
    state.write_text(state.read_text()[:40])
    assert (
        main([str(rec), "--output_dir", str(half), "--resume_from_checkpoint", "last", "--max_steps", "2"])
        == 2
    )
    assert "no complete checkpoint (checkpoint-1: trainer_state.json missing or unfinished" in _error(capsys)
    assert not (half / "checkpoint-2").exists()
    # 13: another run's checkpoint, another recipe
    dpo = recipe(fx, tmp_path / "dpo.yaml", method="dpo")
    resume = ["--resume_from_checkpoint", str(sft / "checkpoint-1"), "--max_steps", "2"]
    assert main([str(dpo), "--output_dir", str(tmp_path / "dpo"), *resume]) == 2
    err = _error(capsys)
    assert (
        "another run's checkpoint, trained with a different recipe" in err and "method: 'sft' -> 'dpo'" in err
    )
    assert yaml.safe_load((sft / "run_config.yaml").read_text())["method"] == "sft"  # only read
