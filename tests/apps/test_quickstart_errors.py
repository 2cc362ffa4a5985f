"""``cavpref quickstart`` given a key, a config file or an ``--out`` folder it cannot use says so in one line and
exits 2, as ``cavpref train`` does (issue 54, first contact): an unknown key ended in a ``ValueError``
traceback (exit 1), and so did a missing config file and a folder of the user's as ``--out``."""

from __future__ import annotations

import pytest

from cavpref.apps.cli import main as cli_main


def one_line_error(capsys) -> str:
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith("cavpref quickstart: error: "), captured.err
    return captured.err


def test_an_unknown_key_is_one_line_naming_it_and_the_closest_key(tmp_path, capsys):
    out = tmp_path / "qs"
    assert cli_main(["quickstart", "--out", str(out), "--sede", "3"]) == 2
    assert "unknown key --sede (did you mean --seed?)" in one_line_error(capsys)
    assert not out.exists()  # refused before any stage


def test_a_missing_config_file_is_one_line_naming_it(tmp_path, capsys):
    missing = tmp_path / "nope.yaml"
    assert cli_main(["quickstart", "--config", str(missing)]) == 2
    assert str(missing) in one_line_error(capsys)


def test_a_folder_of_the_users_as_out_is_one_line_and_left_alone(tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    assert cli_main(["quickstart", "--out", str(mine)]) == 2
    err = one_line_error(capsys)
    assert "is not empty (notes.txt) and was not created by `cavpref quickstart`" in err
    assert [p.name for p in mine.iterdir()] == ["notes.txt"] and (mine / "notes.txt").read_text() == "keep"


def test_a_rerun_under_other_keys_is_refused_naming_them_and_nothing_is_reused(tmp_path, capsys):
    """A run folder resumed with another --seed / --distractors / --eval_limit reused every finished stage as
    it was (the world of the first seed, the first distractors) while the report named the new keys."""
    from cavpref.apps.quickstart import QuickstartConfig, write_config

    out = tmp_path / "qs"
    write_config(QuickstartConfig(preset="small", out=str(out)))  # a run's folder, as its first stage sees it
    before = (out / "quickstart_config.json").read_text()
    assert (
        cli_main(["quickstart", "--preset", "small", "--out", str(out), "--seed", "1", "--eval_limit", "2"])
        == 2
    )
    err = one_line_error(capsys)
    assert "made with other keys (seed: 0 -> 1; eval_limit: 3 -> 2)" in err and "a new --out" in err
    assert (out / "quickstart_config.json").read_text() == before  # the folder's own keys kept
    assert [p.name for p in out.iterdir() if not p.name.startswith(".")] == [
        "quickstart_config.json"
    ]  # no stage


def test_a_rerun_may_add_methods_and_a_folder_from_before_distractors_keeps_its_value(tmp_path):
    import json

    from cavpref.apps.quickstart import QuickstartConfig, write_config
    from cavpref.apps.quickstart.pipeline import check_same_keys
    from cavpref.output_dir import OutputDirError

    out = tmp_path / "qs"
    write_config(QuickstartConfig(preset="small", out=str(out), methods=["dpo"]))
    check_same_keys(
        QuickstartConfig(preset="small", out=str(out))
    )  # every method: more stages, nothing reused wrongly
    saved = json.loads((out / "quickstart_config.json").read_text())
    del saved["distractors"]  # a folder written before the key: its prep used the paper's distractors
    (out / "quickstart_config.json").write_text(json.dumps(saved))
    check_same_keys(QuickstartConfig(preset="small", out=str(out), distractors="category"))
    with pytest.raises(OutputDirError, match="distractors: 'category' -> 'same_group'"):
        check_same_keys(QuickstartConfig(preset="small", out=str(out)))
