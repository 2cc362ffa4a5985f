"""One exit code for a command line a command cannot use (issue 54, first contact): a one-line error on stderr
and exit code 2 (argparse's and the dispatcher's code for usage errors, and ``cavpref train``'s for a recipe, a
path or data it cannot use). ``cavpref export`` exited 1; ``quickstart``, ``check`` and ``model`` printed a
``ValueError`` traceback for an unknown key (exit 1)."""

from __future__ import annotations

import pytest

from cavpref.apps.cli import main as cli_main

# each command's argv up to its keys (then a key none of them has)
COMMANDS = {
    "train": ["train"],
    "check": ["check"],
    "export": ["export"],
    "quickstart": ["quickstart"],
    "world": ["world"],
    "eval": ["eval", "avtrustbench"],
    "build": ["build", "aura"],
    "model": ["model", "tiny-qwen"],
}


@pytest.mark.parametrize("argv", COMMANDS.values(), ids=COMMANDS.keys())
def test_an_unknown_key_is_one_line_and_exit_2_in_every_command(argv, tmp_path, capsys):
    assert cli_main([*argv, "--output_dri", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert "unknown key --output_dri" in err
    assert not (tmp_path / "o").exists()


def test_export_errors_exit_2_in_one_line_and_write_nothing(tmp_path, capsys):
    (tmp_path / "run").mkdir()  # no trained model in it
    argv = ["export", "--run", str(tmp_path / "run"), "--output_dir", str(tmp_path / "out")]
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("cavpref export: error: ") and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()
