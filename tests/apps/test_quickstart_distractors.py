"""``cavpref quickstart --distractors``: prep's key, passed to the run's prep stage (the ladder's fixed world,
``same_group``, measured on the main command in docs/quickstart.md)."""

import json

import pytest

from cavpref.apps.cli import main as cli_main
from cavpref.apps.quickstart import QuickstartConfig
from cavpref.apps.quickstart.pipeline import prep_stage, world_stage
from cavpref.apps.quickstart.stages import Stages
from cavpref.jsonl import read_jsonl


def _clean_options(tmp_path, distractors):
    cfg = QuickstartConfig(
        preset="small", out=str(tmp_path / distractors), calibrate_beta=False, distractors=distractors
    )
    stages = Stages(cfg, tmp_path / distractors)
    world = stages("world", world_stage).dir
    data = stages("data", prep_stage, world, None).dir
    manifest = json.loads((data / "manifest.json").read_text())
    items = [r for _, r in read_jsonl(data / "jsonl" / "benchmark" / "CLEAN" / "test.jsonl")]
    return manifest, {i["id"]: sorted(i["option_texts"]) for i in items}


def test_distractors_reach_prep_and_change_the_offered_options(tmp_path):
    by_category, category_options = _clean_options(tmp_path, "category")
    same_group, group_options = _clean_options(tmp_path, "same_group")
    assert json.dumps(same_group).count('"same_group"') >= 1 and '"same_group"' not in json.dumps(by_category)
    assert category_options.keys() == group_options.keys()  # the same items ...
    assert category_options != group_options  # ... offered other distractors
    assert (
        QuickstartConfig(preset="small").distractors == "same_group"
    )  # the main command's default (issue 56)


def test_an_unknown_distractors_value_is_refused_before_any_stage(tmp_path, capsys):
    out = tmp_path / "qs"
    with pytest.raises(SystemExit) as exit_:
        cli_main(["quickstart", "--out", str(out), "--distractors", "same_kind"])
    assert exit_.value.code == 2 and "same_kind" in capsys.readouterr().err
    assert not out.exists()
