"""Hostile-input pass two (issue 40, #26 "errors that do not say what to fix"): a config file's values are
type-checked once, in ``cavpref.parsing.parse_args``, for every command — list element types included —
and refused in one line naming the file and the key."""

import pytest

from cavpref.parsing import parse_args
from cavpref.recipe_types import RecipeTypeError


@pytest.mark.parametrize(
    "yaml_text, words",
    [
        ("tasks: MCIT\n", "key 'tasks' must be a list of str, got 'MCIT'"),
        ("post_prompt: [a, b]\n", "key 'post_prompt' must be str, got ['a', 'b']"),
        ("tasks: [[MCIT]]\n", "key 'tasks' must be a list of str, got [['MCIT']]"),
        ("- tasks\n", "must be a YAML mapping of keys, got list"),
        ("on: 1\n", "key True is not a string"),
    ],
)
def test_eval_config_values_of_the_wrong_type_are_one_line_errors(tmp_path, capsys, yaml_text, words):
    """``tasks: MCIT`` used to reach the code as the letters ("unknown task(s) ['C','I','M','T']"),
    ``post_prompt: [a, b]`` a TypeError deep in the prompt code."""
    from cavpref.eval.cli import main

    config = tmp_path / "eval.yaml"
    config.write_text(yaml_text)
    assert main(["avtrustbench", str(config), "--data", "d", "--output", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"{config}: " in err and words in err, err


def test_train_recipe_list_elements_are_checked(tmp_path, capsys):
    """``train_tasks: [[MCIT]]`` ended in "unhashable type: 'list'" naming no key."""
    from cavpref.train import main

    recipe = tmp_path / "r.yaml"
    recipe.write_text("train_tasks: [[MCIT]]\noutput_dir: out\n")
    assert main([str(recipe)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{recipe}: key 'train_tasks' must be a list of str or null, got [['MCIT']]" in err


def test_strings_the_parser_converts_are_accepted(tmp_path):
    """argparse converts a string default with the field's type: ``1e-5`` (a string to YAML) is a float."""
    from dataclasses import dataclass, field

    @dataclass
    class A:
        lr: float = field(default=0.1, metadata={"help": "x"})
        flag: bool = field(default=False, metadata={"help": "x"})
        names: list[str] = field(default_factory=list, metadata={"help": "x"})
        weights: dict[str, float] = field(default_factory=dict, metadata={"help": "x"})

    config = tmp_path / "a.yaml"
    config.write_text("lr: 1e-5\nflag: 'true'\nnames: [a, b]\n")
    (a,) = parse_args([A], [str(config)])
    assert (a.lr, a.flag, a.names) == (1e-5, True, ["a", "b"])
    config.write_text("lr: fast\n")
    with pytest.raises(RecipeTypeError, match="key 'lr' must be float, got 'fast'"):
        parse_args([A], [str(config)])
    config.write_text("weights: {MCIT: high}\n")
    with pytest.raises(RecipeTypeError, match="key 'weights' must be a mapping to float"):
        parse_args([A], [str(config)])
