"""The ``cavpref`` dispatcher and the one command-line convention: every command answers ``--help`` with its
keys, and the quickstart / scripts read ``--config FILE.yaml`` with command-line overrides."""

import ast
import dataclasses
import importlib
from pathlib import Path

import pytest

from cavpref.apps.cli import COMMANDS
from cavpref.apps.cli import main as cli_main
from cavpref.apps.quickstart import QuickstartConfig
from cavpref.parsing import parse_args

ROOT = Path(__file__).resolve().parents[2]
# Keys each command's --help must list (commands whose parsers other work owns: exit 0 and some output).
KEYS = {
    "quickstart": [
        f"--{f.name}"
        for f in dataclasses.fields(QuickstartConfig)
        if f.name not in QuickstartConfig.help_groups
    ],
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
    path.write_text("preset: small\nseed: 3\nmethods: [dpo, cavpref]\nsft_steps: 9\n")
    (cfg,) = parse_args([QuickstartConfig], ["--config", str(path), "--seed", "4"], prog="cavpref quickstart")
    assert (cfg.preset, cfg.seed, cfg.methods, cfg.sft_steps) == ("small", 4, ["dpo", "cavpref"], 9)
    assert cfg.pref_steps == 3  # unset keys still take the small preset's value
    path.write_text("preset: small\nsft_stpes: 9\n")
    with pytest.raises(ValueError, match="sft_stpes"):
        parse_args([QuickstartConfig], ["--config", str(path)])
    with pytest.raises(ValueError, match="sft_stpes"):  # on the command line too
        parse_args([QuickstartConfig], ["--sft_stpes", "9"])


SCRIPTS = sorted(
    p.stem for p in (ROOT / "scripts").glob("*.py") if p.stem != "train"
)  # train.py: `cavpref train`


def command_module(name: str) -> str:
    """The ``cavpref_lab`` module whose ``main`` ``scripts/<name>.py`` runs — the file's one import of a name."""
    tree = ast.parse((ROOT / "scripts" / f"{name}.py").read_text())
    (module,) = [
        n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module.startswith("cavpref_lab")
    ]
    return module


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_is_an_entry_point_of_a_lab_module(name):
    """A script holds no code of its own: a docstring, ``import sys``, ``from cavpref_lab.<module> import main``
    and the ``__main__`` guard, so the code lives in an importable module (tests import it; no by-path loads)."""
    tree = ast.parse((ROOT / "scripts" / f"{name}.py").read_text())
    kinds = [type(n).__name__ for n in tree.body]
    assert kinds == ["Expr", "Import", "ImportFrom", "If"], kinds
    assert [a.name for a in tree.body[2].names] == ["main"]
    assert hasattr(importlib.import_module(command_module(name)), "main")


@pytest.mark.parametrize("name", SCRIPTS)
def test_every_script_parses_with_the_one_convention_and_lists_its_keys(name, capsys, monkeypatch):
    import cavpref.parsing

    module = importlib.import_module(command_module(name))
    assert not hasattr(module, "argparse")  # no second command-line convention
    given = []  # the argument dataclasses the command hands to parse_args (its own or its package's config)

    def parse_args(types, *args, **kwargs):
        given.extend(types)
        return real(types, *args, **kwargs)

    real = cavpref.parsing.parse_args
    monkeypatch.setattr(cavpref.parsing, "parse_args", parse_args)  # the commands that import it in main
    if hasattr(module, "parse_args"):
        monkeypatch.setattr(module, "parse_args", parse_args)
    with pytest.raises(SystemExit) as stop:
        module.main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    own = [t for t in given if t.__module__.startswith("cavpref_lab")]
    assert own, f"{module.__name__} parses no argument dataclass of its own"
    missing = [
        f"--{f.name}"
        for t in own
        for f in dataclasses.fields(t)
        if f"--{f.name}" not in out and f.name not in getattr(t, "help_groups", {})  # those: --help_all
    ]
    assert not missing, missing


def test_sweep_reads_a_config_file_and_passes_what_follows_dashes_to_train(tmp_path):
    from cavpref_lab import sweep

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


def test_quickstart_help_shows_the_user_keys_and_help_all_every_key(capsys):
    """`cavpref quickstart --help` fits in a person's head (at most 12 keys); --help_all lists the rest by group,
    each preset-controlled key with its value in every preset."""
    code, brief = help_of(["quickstart", "--help"], capsys)
    shown = [f.name for f in dataclasses.fields(QuickstartConfig) if f"--{f.name} " in brief]
    assert code == 0 and 0 < len(shown) <= 12 and "--help_all" in brief, shown
    assert "--hidden_size" not in brief and "--caption_see" not in brief
    code, full = help_of(["quickstart", "--help_all"], capsys)
    assert code == 0 and all(f"--{f.name} " in full for f in dataclasses.fields(QuickstartConfig))
    for group in set(QuickstartConfig.help_groups.values()):
        assert f"\n{group}:\n" in full
    assert "preset: default 128 / perceiving 256 / small 32" in full  # --hidden_size's values


def test_train_help_shows_cavpref_keys_and_help_all_the_trainer_keys(capsys):
    code, brief = help_of(["train", "--help"], capsys)
    assert code == 0 and "--lambda_a " in brief and "--train_dataset " in brief
    assert "--adam_beta1 " not in brief and "inherited from transformers" in brief  # named, not listed
    code, full = help_of(["train", "--help_all"], capsys)
    assert (
        code == 0
        and "--adam_beta1 " in full
        and "\ninherited from transformers (TrainingArguments):\n" in full
    )
    assert len(brief.splitlines()) < len(full.splitlines()) / 2
