"""Third hostile pass (issue 54): what ``eval compare`` writes (--html / --output / --plot onto existing files,
a compared run's own files, a folder) and recipes that are not recipes. The table is in docs/reliability.md,
"Third hostile pass: training, export and comparison"; export and the output folders held (one-line refusals
already tested in tests/test_export_model.py and tests/test_hostile_output_dirs.py)."""

from __future__ import annotations

import pytest

from cavpref.apps.cli import main as cavpref_main
from tests.helpers.html_report_check import build_data, page_data, run_eval, scripted


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("third_pass")
    data = build_data(root)
    mp = pytest.MonkeyPatch()
    try:
        for label in ("a", "b"):
            run_eval(data, root / label, scripted("x"), mp, label=label)
    finally:
        mp.undo()
    return root / "a", root / "b"


def _compare(runs, capsys, *extra) -> tuple[int, str]:
    capsys.readouterr()
    code = cavpref_main(["eval", "compare", str(runs[0]), str(runs[1]), "--no_media", *extra])
    err = capsys.readouterr().err.strip().splitlines()
    return code, err[-1] if err else ""


@pytest.mark.parametrize(
    "key, name", [("--html", "mine.html"), ("--output", "table.md"), ("--plot", "p.png")]
)
def test_a_users_existing_file_is_not_replaced_unless_asked(runs, tmp_path, capsys, key, name):
    mine = tmp_path / name
    mine.write_text("the user's own file")
    code, err = _compare(runs, capsys, key, str(mine))
    assert (
        code == 2
        and f"{key} {mine} exists and was not written by cavpref" in err
        and "--overwrite true" in err
    )
    assert mine.read_text() == "the user's own file"
    assert _compare(runs, capsys, key, str(mine), "--overwrite", "true")[0] == 0
    assert mine.read_bytes() != b"the user's own file"


@pytest.mark.parametrize("name", ["report.html", "results.json", "report.md"])
def test_a_compared_runs_own_files_are_never_written_over(runs, capsys, name):
    target = runs[0] / name
    before = target.read_bytes()
    for extra in ((), ("--overwrite", "true")):
        code, err = _compare(runs, capsys, "--html", str(target), *extra)
        assert code == 2 and "is a file of the run 1 folder" in err and "write it elsewhere" in err, err
    assert target.read_bytes() == before  # results.json was replaced by the page: the run was gone


def test_a_folder_as_the_page_is_one_line_and_our_own_page_is_rebuilt(runs, tmp_path, capsys):
    code, err = _compare(runs, capsys, "--html", str(tmp_path))
    assert code == 2 and f"--html {tmp_path} is a folder; give the path of a file" in err  # was a traceback
    page = tmp_path / "cmp" / "compare.html"
    assert _compare(runs, capsys, "--html", str(page))[0] == 0
    assert _compare(runs, capsys, "--html", str(page))[0] == 0  # the same command again: its own page
    assert page_data(page)["runs"] == ["a", "b"]


def test_a_results_json_that_is_not_json_is_named(runs, tmp_path, capsys):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "results.json").write_text("<!DOCTYPE html>")
    capsys.readouterr()
    assert cavpref_main(["eval", "compare", str(tmp_path / "bad"), str(runs[1])]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'bad' / 'results.json'}: not a results.json of a finished run (not JSON" in err


@pytest.mark.parametrize(
    "text, says",
    [
        ("", "a recipe must be a YAML mapping of keys, got an empty file"),
        ("- a\n- b\n", "a recipe must be a YAML mapping of keys, got list"),
        (None, "no such recipe file"),
        ("folder", "is a folder, not a recipe file"),
    ],
)
def test_a_recipe_that_is_not_a_recipe_is_one_line(tmp_path, capsys, text, says):
    path = tmp_path / "r.yaml"
    if text == "folder":
        path.mkdir()
    elif text is not None:
        path.write_text(text)
    assert cavpref_main(["train", "--config", str(path), "--output_dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("cavpref train: error: ") and says in err and err.count("\n") == 1, err
