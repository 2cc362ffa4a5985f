"""The ``cavpref`` dispatcher and the one command-line convention: every command answers ``--help`` with its
keys, and the quickstart / scripts read ``--config FILE.yaml`` with command-line overrides."""

import dataclasses
from pathlib import Path

import pytest
from script_module import script

from cavpref.apps.cli import COMMANDS
from cavpref.apps.cli import main as cli_main
from cavpref.apps.quickstart import QuickstartConfig
from cavpref.parsing import parse_args

ROOT = Path(__file__).resolve().parents[1]
# Keys each command's --help must list (commands whose parsers other work owns: exit 0 and some output).
KEYS = {
    "quickstart": [f"--{f.name}" for f in dataclasses.fields(QuickstartConfig)],
    "world": ["--out", "--seed", "--num_clips"],
}


def help_of(argv: list[str], capsys) -> tuple[int, str]:
    try:
        code = cli_main(argv)
    except SystemExit as stop:  # argparse exits after printing the help
        code = stop.code or 0
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_top_level_help_lists_every_command(capsys):
    for argv in ([], ["--help"], ["-h"]):
        code, out = help_of(argv, capsys)
        assert code == 0
        for name, (_, what) in COMMANDS.items():
            assert f"  {name}" in out and what in out


def test_unknown_command_is_an_error_naming_it(capsys):
    code, out = help_of(["trian"], capsys)
    assert code == 2 and "unknown command 'trian'" in out


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_help_exits_0_and_lists_its_keys(command, capsys):
    code, out = help_of([command, "--help"], capsys)
    assert code == 0, out[-2000:]
    assert out.strip()
    missing = [k for k in KEYS.get(command, []) if k not in out]
    assert not missing, missing


def test_quickstart_reads_a_config_file_and_the_command_line_overrides_it(tmp_path):
    path = tmp_path / "qs.yaml"
    path.write_text("small: true\nseed: 3\nmethods: [dpo, cavpref]\nsft_steps: 9\n")
    (cfg,) = parse_args([QuickstartConfig], ["--config", str(path), "--seed", "4"], prog="cavpref quickstart")
    assert (cfg.small, cfg.seed, cfg.methods, cfg.sft_steps) == (True, 4, ["dpo", "cavpref"], 9)
    assert cfg.pref_steps == 3  # unset keys still take the --small default
    path.write_text("small: true\nsft_stpes: 9\n")
    with pytest.raises(ValueError, match="sft_stpes"):
        parse_args([QuickstartConfig], ["--config", str(path)])
    with pytest.raises(ValueError, match="sft_stpes"):  # on the command line too
        parse_args([QuickstartConfig], ["--sft_stpes", "9"])


SCRIPTS = sorted(
    p.stem for p in (ROOT / "scripts").glob("*.py") if p.stem != "train"
)  # train.py: `cavpref train`


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_parses_with_the_one_convention_and_lists_its_keys(name, capsys):
    module = script(name)
    assert not hasattr(module, "argparse")  # no second command-line convention
    with pytest.raises(SystemExit) as stop:
        module.main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    own = [t for t in vars(module).values() if dataclasses.is_dataclass(t) and t.__module__ == name]
    assert own, f"scripts/{name}.py declares no argument dataclass"
    missing = [f"--{f.name}" for t in own for f in dataclasses.fields(t) if f"--{f.name}" not in out]
    assert not missing, missing


def test_sweep_reads_a_config_file_and_passes_what_follows_dashes_to_train(tmp_path):
    sweep = script("sweep")
    path = tmp_path / "sweep.yaml"
    path.write_text("recipe: r.yaml\nout: o\nlambda_a: [0.4, 0.8]\ntrain_overrides: [--max_steps, '5']\n")
    args, grid, tasks = sweep.parse(
        ["--config", str(path), "--out", "o2", "--lambda_y", "1", "2", "--", "--seed", "3"]
    )
    assert grid == {"lambda_y": [1.0, 2.0], "lambda_a": [0.4, 0.8]} and args.out == "o2"
    assert args.extra == ["--max_steps", "5", "--seed", "3"] and tasks["lambda_a"] == "MAIT"
    with pytest.raises(SystemExit, match="at least one axis"):
        sweep.parse(["--recipe", "r.yaml", "--out", "o"])
    with pytest.raises(ValueError, match="max_steps"):  # an unknown key is an error, not a pass-through
        sweep.parse(["--recipe", "r.yaml", "--out", "o", "--lambda_a", "1", "--max_steps", "5"])
