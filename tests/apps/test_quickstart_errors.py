"""``cavpref quickstart`` given a key, a config file or an ``--out`` folder it cannot use says so in one line and
exits 2, as ``cavpref train`` does (issue 54, first contact): an unknown key ended in a ``ValueError``
traceback (exit 1), and so did a missing config file and a folder of the user's as ``--out``."""

from __future__ import annotations

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
