"""Second hostile-input pass (issue 40, #22): a 324-byte "billion laughs" recipe of YAML aliases hung
`cavpref train` and `cavpref prep` (60 s, 2 GB and growing; the type-check error message expanded the value).
Every YAML file goes through ``cavpref.parsing.load_yaml``, which counts what the aliases expand to on the
composed document, before any value is built."""

from __future__ import annotations

import time

import pytest

from cavpref.apps.cli import main as cavpref_main
from cavpref.parsing import MAX_YAML_VALUES, YAMLLimitError, load_yaml
from cavpref.recipe_types import check_recipe_types

LAUGHS = ["  - &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
for name, prev in zip("bcdefghi", "abcdefgh"):
    LAUGHS.append(f"  - &{name} [{', '.join([f'*{prev}'] * 9)}]")


def bomb(tmp_path, key: str):
    """Every anchor inside the value of one known key, so that nothing but the expansion is wrong."""
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join([f"{key}:", *LAUGHS]) + "\n")
    assert path.stat().st_size < 500  # a few hundred bytes ...
    return path  # ... that expand to 9^9 = 387 M strings


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "command, key",
    [("train", "lambda_a"), ("train", "train_tasks"), ("prep", "tasks"), ("eval", "tasks")],
)
def test_an_alias_bomb_is_refused_at_once_naming_the_file(command, key, tmp_path, capsys):
    path = bomb(tmp_path, key)
    argv = {
        "train": ["train", str(path)],
        "prep": ["prep", str(path)],
        "eval": ["eval", "avtrustbench", str(path)],
    }
    start = time.monotonic()
    try:
        code = cavpref_main(argv[command])
        error = capsys.readouterr().err
    except YAMLLimitError as err:
        code, error = 1, str(err)
    assert code != 0 and time.monotonic() - start < 30
    assert f"{path}: its YAML aliases expand to more than {MAX_YAML_VALUES} values" in error
    assert len(error) < 500  # the value is never expanded into the message


def test_ordinary_anchors_still_load_and_recursive_ones_are_refused(tmp_path):
    ok = tmp_path / "ok.yaml"
    ok.write_text("base: &b {lr: 0.1, steps: 3}\nsft: *b\ndpo: {<<: *b, beta: 0.1}\n")
    assert load_yaml(ok) == {
        "base": {"lr": 0.1, "steps": 3},
        "sft": {"lr": 0.1, "steps": 3},
        "dpo": {"lr": 0.1, "steps": 3, "beta": 0.1},
    }
    loop = tmp_path / "loop.yaml"
    loop.write_text("a: &a [1, *a]\n")
    with pytest.raises(YAMLLimitError, match="refers to itself"):
        load_yaml(loop)
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    with pytest.raises(YAMLLimitError, match="nested too deeply"):
        load_yaml(deep)


@pytest.mark.timeout(60)
def test_a_type_error_never_prints_the_whole_value():
    from cavpref.config import CAVPrefConfig

    huge = ["lol"] * 9
    for _ in range(8):
        huge = [huge] * 9  # shared, as YAML aliases build it: 9^9 strings once printed
    with pytest.raises(TypeError) as err:
        check_recipe_types({"lambda_a": huge}, [CAVPrefConfig], "r.yaml")
    assert "key 'lambda_a' must be float" in str(err.value) and len(str(err.value)) < 400


def test_a_long_file_loads_whole(tmp_path):
    long = tmp_path / "long.yaml"
    long.write_text("".join(f"key_{i}: {i}\n" for i in range(5000)))  # past the loader's first read
    assert load_yaml(long) == {f"key_{i}": i for i in range(5000)}
