"""CLEAN by default (issue 54 #12, issue 56): `cavpref prep` builds the CLEAN items (the clean twins) unless told
otherwise, and `cavpref eval avtrustbench` without `--tasks` evaluates them when the data holds them, so the docs'
commands get a paired trust score; when a run has no clean twin, its warning names the fix that works for its
data (rebuild with prep, or add CLEAN to --tasks)."""

from __future__ import annotations

import json

import pytest

from cavpref.apps.cli import main as cavpref
from cavpref.data import ALL_TASKS, CLEAN_TASK, TASKS
from cavpref.data_prep.build import PrepConfig
from tests.helpers import trainer_fixtures as F


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return F.shared(tmp_path_factory)["model"]


@pytest.fixture(scope="module")
def data(small_world, tmp_path_factory):
    """`cavpref prep --world W --output_dir D` as the docs write it (no tasks key)."""
    out = tmp_path_factory.mktemp("clean_default") / "data"
    assert (
        cavpref(["prep", "--world", str(small_world), "--output_dir", str(out), "--progress", "false"]) == 0
    )
    return out


@pytest.fixture(scope="module")
def nine_only(small_world, tmp_path_factory):
    """A build of the nine tasks only (an older build, or a config listing its own tasks)."""
    out = tmp_path_factory.mktemp("clean_default") / "nine"
    argv = ["prep", "--world", str(small_world), "--output_dir", str(out), "--progress", "false"]
    assert cavpref([*argv, "--tasks", *TASKS]) == 0
    return out


def test_prep_builds_clean_by_default(data):
    assert PrepConfig().tasks == [*TASKS, CLEAN_TASK] == list(ALL_TASKS)
    stats = json.loads((data / "stats.json").read_text())
    assert stats["tasks"][CLEAN_TASK]["items"] > 0 and (data / "benchmark" / CLEAN_TASK).is_dir()
    manifest = json.loads((data / "manifest.json").read_text())
    assert manifest["config"]["tasks"] == list(ALL_TASKS)


def evaluate(model, data, out, *extra):
    argv = ["eval", "avtrustbench", "--model", str(model), "--data", str(data), "--output", str(out)]
    assert cavpref([*argv, "--mode", "likelihood", "--limit", "1", "--num_frames", "2", *extra]) == 0
    return json.loads((out / "results.json").read_text())


def test_the_docs_eval_command_gets_a_paired_trust_score(model, data, tmp_path, caplog):
    results = evaluate(model, data, tmp_path / "zs")
    tasks = results["metrics"]["settings"]["base"]["tasks"]
    assert CLEAN_TASK in tasks and set(TASKS) & set(tasks)
    paired = results["metrics"]["trust"]["settings"]["base"]["paired"]
    assert paired["n"] > 0 and paired["circular"] is not None
    assert "no CLEAN items evaluated" not in caplog.text


def test_without_clean_in_the_data_the_advice_is_to_rebuild_with_prep(model, nine_only, tmp_path, caplog):
    results = evaluate(model, nine_only, tmp_path / "zs")
    assert CLEAN_TASK not in results["metrics"]["settings"]["base"]["tasks"]
    err = caplog.text
    assert f"needs each perturbed item's clean twin, and {nine_only} holds none" in err
    assert "holds none: rebuild it with `cavpref prep` (CLEAN is one of its default tasks" in err
    assert "add CLEAN to --tasks" not in err  # that cannot work on this data


def test_clean_left_out_by_tasks_the_advice_is_to_add_it(model, data, tmp_path, caplog):
    results = evaluate(model, data, tmp_path / "zs", "--tasks", "MCIT")
    assert set(results["metrics"]["settings"]["base"]["tasks"]) == {"MCIT"}  # an explicit --tasks is kept
    assert f"{data} holds CLEAN items, add CLEAN to --tasks" in caplog.text
