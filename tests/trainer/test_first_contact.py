"""A new user's first contact (issue 37, points c, g, h): what the trainer says when the data cannot train, when a
path is wrong, and what it prints while it trains. Real tiny runs on the trainer fixtures."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
import yaml

from cavpref.train import main
from tests.helpers import trainer_fixtures as F


def recipe(fx, path, **overrides):
    cfg = {
        "method": "cavpref",
        "train_dataset": str(fx["prefs"]),
        "media_root": str(fx["media"]),
        "model_name_or_path": str(fx["model"]),
        "dtype": "float32",
        "lora_r": 0,
        "num_frames": 2,
        "per_device_train_batch_size": 4,
        "max_steps": 1,
        "logging_steps": 1,
        "save_strategy": "no",
        "use_cpu": True,
        "bf16": False,
        "activation_checkpointing": False,
        "report_to": "none",
        "dataloader_num_workers": 0,
        "disable_tqdm": True,
        **overrides,
    }
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


@pytest.fixture(scope="module")
def unscored(fx, tmp_path_factory):
    """The fixtures' rows without their scores, as data prepared without scoring come out of prep."""
    out = tmp_path_factory.mktemp("unscored") / "prefs"
    ds = F.dataset().map(lambda r: {"clap_delta": None, "avsm_delta_v": None, "avsm_delta_a": None})
    ds.save_to_disk(str(out))
    return out


def test_unscored_rows_with_calibrated_beta_name_the_real_fixes(fx, unscored, tmp_path, capsys):
    rec = recipe(fx, tmp_path / "r.yaml", train_dataset=str(unscored))
    assert main([rec, "--output_dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "9 unusable rows of 9 in the train dataset" in err and "'clap_delta' is missing" in err
    assert (
        "score the data (prep with `score: true`" in err and "--beta_y 0.1 --beta_v 0.1 --beta_a 0.1" in err
    )
    assert "skip_bad_rows" not in err.split(":\n")[0]  # skipping every row is no fix
    # the fix it names works: fixed β trains on the same rows
    fixed = ["--beta_y", "0.1", "--beta_v", "0.1", "--beta_a", "0.1"]
    assert main([rec, "--output_dir", str(tmp_path / "fixed"), *fixed]) == 0


def test_skip_bad_rows_that_leaves_no_row_is_an_error_not_an_untrained_model(fx, unscored, tmp_path, capsys):
    rec = recipe(fx, tmp_path / "r.yaml", train_dataset=str(unscored), skip_bad_rows=True)
    out = tmp_path / "o"
    assert main([rec, "--output_dir", str(out)]) == 2
    err = capsys.readouterr().err
    assert "skip_bad_rows left no usable row: all 9 rows of the train dataset are unusable" in err
    assert "score the data" in err and not (out / "model.safetensors").exists()


def test_wrong_paths_are_one_line_errors_before_the_model_loads(fx, tmp_path, capsys, monkeypatch):
    import cavpref.models

    def no_load(*args, **kwargs):
        raise AssertionError("the model was loaded before the paths were checked")

    monkeypatch.setattr(cavpref.models, "load_model_io", no_load)
    rec = recipe(fx, tmp_path / "r.yaml")
    # the relative paths a user types, resolved in an empty folder: the README's example may have created
    # runs/tiny/* in the folder pytest runs from (issue 54 #13)
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path / "empty")
    for overrides, says in (
        (["--train_dataset", "runs/tiny/prefs"], "train_dataset 'runs/tiny/prefs': no such folder"),
        (["--media_root", "runs/tiny/world"], "media_root 'runs/tiny/world': no such folder"),
        (["--model_name_or_path", "runs/tiny/model"], "`cavpref model tiny-qwen --out runs/tiny/model`"),
        (["--model_name_or_path", "tiny-model"], "model_name_or_path 'tiny-model': no such folder"),
    ):
        t0 = time.perf_counter()
        assert main([rec, "--output_dir", str(tmp_path / "o"), *overrides]) == 2
        err = capsys.readouterr().err
        assert err.startswith("cavpref train: error: ") and says in err and err.count("\n") == 1, err
        assert "Traceback" not in err and time.perf_counter() - t0 < 20  # no hub retries
    with pytest.raises(FileNotFoundError):  # --debug: the exception and its traceback
        main([rec, "--output_dir", str(tmp_path / "o"), "--media_root", "nope", "--debug"])


def test_the_console_shows_one_short_line_per_step_and_the_log_keeps_every_metric(fx, tmp_path, capsys):
    import json

    out = tmp_path / "o"
    rec = recipe(fx, tmp_path / "r.yaml", max_steps=2)
    assert main([rec, "--output_dir", str(out), "--beta_y", "0.1", "--beta_v", "0.1", "--beta_a", "0.1"]) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    assert printed[0].startswith("step 1/2  loss ") and "metrics in logs.jsonl" in printed[0]
    assert all(len(line) < 160 for line in printed) and "{'loss'" not in "\n".join(printed)
    logged = [json.loads(x) for x in (out / "logs.jsonl").read_text().splitlines()]
    assert any("y/margin" in r for r in logged)  # the full metrics are in the file


def test_a_cut_audio_warning_is_said_once_and_counted(fx):
    from cavpref.media.decode import DecodedMedia
    from cavpref.models import load_model_io

    io = load_model_io(str(fx["model"]), dtype="float32", audio_max_seconds=1.0)
    frames = np.zeros((2, 56, 56, 3), dtype=np.uint8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for seconds in (1.5, 2.0, 2.5):  # three lengths: before, three different warnings
            audio = np.zeros(int(16000 * seconds), dtype=np.float32)
            io.encode_media(
                DecodedMedia(frames, np.array([0.0, 0.5]), audio, sample_rate=16000, duration=seconds)
            )
    cut = [w for w in caught if "audio cut to 1 s" in str(w.message)]
    assert len(cut) == 1 and "first clip 1.5 s" in str(cut[0].message) and io.audio_cuts == 3
