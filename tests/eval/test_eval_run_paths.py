"""A finished run's relative inputs are found again from another working folder (issue 54 #11): the
quickstart's report suggests ``cavpref eval compare eval/start eval/cavpref --html compare.html``, run from its
folder, but the runs recorded their data as given relative to the folder the quickstart was started in, so
re-reading them failed (exit 2) from anywhere but there."""

from __future__ import annotations

import json
import shutil

import pytest

from cavpref.apps.cli import main as cavpref_main
from tests.helpers.html_report_check import build_data, page_data, run_eval, scripted
from tests.helpers.judge_server import completion


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return build_data(tmp_path_factory.mktemp("paths_data"))


def test_compare_of_runs_given_relative_data_works_from_the_runs_parent(data, tmp_path, monkeypatch, capsys):
    shutil.copytree(data, tmp_path / "d")
    monkeypatch.chdir(tmp_path)  # the quickstart was started here, with relative paths
    run_eval(tmp_path.joinpath("d").relative_to(tmp_path), "qs/eval/a", scripted("x"), monkeypatch, label="a")

    def abstains(body, n):
        return 200, {}, completion("None of the above."), 0

    run_eval(tmp_path.joinpath("d").relative_to(tmp_path), "qs/eval/b", abstains, monkeypatch, label="b")
    assert json.loads((tmp_path / "qs/eval/a/results.json").read_text())["config"]["data"] == "d/items.jsonl"
    monkeypatch.chdir(tmp_path / "qs")  # where report.md is, as the report says
    capsys.readouterr()
    code = cavpref_main(["eval", "compare", "eval/a", "eval/b", "--html", "compare.html", "--no_media"])
    assert code == 0, capsys.readouterr().err
    assert page_data(tmp_path / "qs" / "compare.html")["runs"] == ["a", "b"]


def test_the_quickstart_reports_compare_command_works_as_printed(tmp_path, monkeypatch):
    """The report's command, run as printed from another folder than either the quickstart's or the report's
    (a quickstart given a relative --out, as the README's users do)."""
    import os
    import re
    import subprocess
    import sys

    monkeypatch.chdir(tmp_path)
    assert cavpref_main(["quickstart", "--preset", "small", "--methods", "cavpref", "--out", "runs/qs"]) == 0
    report = (tmp_path / "runs/qs/report.md").read_text()
    command = re.search(r"from this report's folder .*?: `(cd .*? --html compare\.html)`", report, re.DOTALL)
    assert command, report
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        command.group(1),
        shell=True,
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert page_data(tmp_path / "runs/qs/compare.html")["runs"]
