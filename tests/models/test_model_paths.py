"""`--model` / `model_name_or_path` that is no model (issue 54 #8): another stage's folder says what it is and
what to pass; a mistyped path says "no such folder or Hub id" — not "model_type None has no registered
model_io … register_model_io(...)" nor transformers' "Repo id must be in the form …". Checked by the eval, the
trainer and `cavpref check` before any model loads."""

from __future__ import annotations

import json

import pytest
import yaml

from cavpref.apps.cli import main as cavpref
from cavpref.data_prep.build import PrepConfig, build
from cavpref.models.registry import load_model_io
from tests.helpers import trainer_fixtures as F


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    return F.shared(tmp_path_factory)


@pytest.fixture(scope="module")
def folders(small_world, tmp_path_factory):
    """The folders a user mistakes for a model: the world, a prep output, its preference rows, a training run
    killed before its final save, an evaluation run, and a plain folder."""
    base = tmp_path_factory.mktemp("not_models")
    prep = base / "data"
    build(PrepConfig(world=str(small_world), output_dir=str(prep), tasks=["MCIT"], progress=False))
    run = base / "run"
    for step in (10, 20):
        (run / f"checkpoint-{step}").mkdir(parents=True)
    (base / "eval").mkdir()
    (base / "eval" / "results.json").write_text("{}")
    (base / "plain").mkdir()
    return {
        "world": (small_world, "a `cavpref world` folder (the source clips), not a model"),
        "prep": (prep, "a `cavpref prep` folder (benchmark items and preference rows), not a model"),
        "prefs": (prep / "preferences", "a `datasets` folder (save_to_disk), not a model"),
        "run": (run, f"its last checkpoint is {run / 'checkpoint-20'}"),
        "eval": (base / "eval", "a `cavpref eval` run folder, not a model"),
        "plain": (base / "plain", "a folder without config.json, not a model"),
    }


@pytest.mark.parametrize("kind", ["world", "prep", "prefs", "run", "eval", "plain"])
def test_loading_a_folder_that_is_no_model_says_what_it_is(kind, folders):
    path, says = folders[kind]
    with pytest.raises(ValueError) as err:
        load_model_io(str(path))
    assert f"model '{path}' is " in str(err.value) and says in str(err.value)
    assert "register_model_io" not in str(err.value) and "\n" not in str(err.value)


def test_eval_with_the_prep_folder_as_model(folders, tmp_path, capsys):
    path, _ = folders["prep"]
    argv = [
        "eval",
        "avtrustbench",
        "--model",
        str(path),
        "--data",
        str(path),
        "--output",
        str(tmp_path / "e"),
    ]
    assert cavpref(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"cavpref eval avtrustbench: model '{path}' is a `cavpref prep` folder (benchmark items and preference "
        "rows), not a model; pass a model folder (one with config.json, e.g. `cavpref model tiny-qwen --out "
        "DIR`) or a Hub id"
    )


@pytest.mark.parametrize("typo", ["runs/tiny/modl", "modl", "world/modl"])
def test_a_mistyped_model_path_is_no_such_folder_or_hub_id(typo, folders, tmp_path, monkeypatch, capsys):
    """``world/modl`` has the form of a Hub id, but ``world`` is a folder here: a local path."""
    world = folders["world"][0]
    monkeypatch.chdir(world.parent)
    typo = typo.replace("world/", f"{world.name}/")
    argv = ["eval", "avtrustbench", "--model", typo, "--data", str(folders["prep"][0])]
    assert cavpref([*argv, "--output", str(tmp_path / "e")]) == 2
    err = capsys.readouterr().err
    assert f"model '{typo}': no such folder or Hub id" in err and "Repo id must be" not in err
    assert err.count("\n") == 1


def recipe(fx, path, **overrides):
    cfg = {
        "method": "dpo",
        "train_dataset": str(fx["prefs"]),
        "media_root": str(fx["media"]),
        "model_name_or_path": str(fx["model"]),
        "max_steps": 1,
        "use_cpu": True,
        "report_to": "none",
        **overrides,
    }
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_train_and_check_with_the_world_as_model(fx, folders, tmp_path, capsys):
    world, says = folders["world"]
    rec = recipe(fx, tmp_path / "r.yaml", model_name_or_path=str(world))
    assert cavpref(["train", rec, "--output_dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"model_name_or_path '{world}' is {says}" in err and err.count("\n") == 1
    assert cavpref(["check", rec, "--output_dir", str(tmp_path / "o")]) != 0
    err = capsys.readouterr().err
    assert f"model_name_or_path '{world}' is {says}" in err and "Traceback" not in err


def test_a_model_folder_still_loads(fx):
    assert json.loads((fx["model"] / "config.json").read_text())["model_type"]
    assert load_model_io(str(fx["model"])).model is not None
