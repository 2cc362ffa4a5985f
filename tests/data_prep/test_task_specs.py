"""One TaskSpec per task, declared in its module, read by the generators, prep and the evaluator; the core
loss gets the switch table as data."""

import importlib

import pytest

from cavpref.data import ABSTAIN_TASKS, ALL_TASKS, DIMENSIONS
from cavpref.data_prep.tasks import GENERATORS, TASK_SPECS, TaskSpec, switch_table, task_spec
from cavpref.eval import extract
from cavpref.eval.benchmarks.avtrustbench import choice_judge
from cavpref.loss import DEFAULT_SWITCHES, switches_for

MODULES = {
    "MCIT": "mcit",
    "ICIT": "icit",
    "MVIT": "mvit",
    "MAIT": "mait",
    "COT-Stitch": "cot_stitch",
    "COT-Swap": "cot_swap",
    "CAT": "cat",
    "MVT": "mvt",
    "MAT": "mat",
    "CLEAN": "clean",
}


def test_every_task_declares_its_spec_in_its_own_module():
    assert set(TASK_SPECS) == set(ALL_TASKS) == set(GENERATORS)
    for task, name in MODULES.items():
        module = importlib.import_module(f"cavpref.data_prep.tasks.{name}")
        assert module.SPEC is TASK_SPECS[task] and module.SPEC.name == module.TASK == task
        assert module.generate is GENERATORS[task]


def test_specs_agree_with_the_core_constants():
    for dim, tasks in DIMENSIONS.items():
        assert all(task_spec(t).dimension == dim for t in tasks)
    assert {t for t, s in TASK_SPECS.items() if s.abstains} == set(ABSTAIN_TASKS)
    # the trainer's built-in defaults are the specs' table (the core cannot import the specs)
    assert {t: list(v) for t, v in DEFAULT_SWITCHES.items()} == switch_table("paper")
    assert {t: list(switches_for(t, "released")) for t in ALL_TASKS} == switch_table("released")
    assert switch_table("released")["COT-Swap"] == [1, 1] and switch_table()["COT-Swap"] == [1, 0]


def test_the_evaluator_reads_task_facts_from_the_specs():
    for task, spec in TASK_SPECS.items():
        if spec.abstains:
            assert extract.ABSTENTION_RESPONSES[task] == spec.abstention_response
            assert extract.ABSTENTIONS[task] == spec.abstention_patterns
            assert choice_judge.JUDGE_EXTRA_OPTIONS[task] == spec.judge_options
            # the base-setting chosen sentence is recognised as an abstention by the extraction
            ext = extract.match_choice(
                spec.abstention, {"A": "Cat", "B": "Dog"}, task=task, abstain_letter=None
            )
            assert ext.choice == extract.ABSTAIN, (task, ext)
        else:
            assert task not in extract.ABSTENTION_RESPONSES and task not in choice_judge.JUDGE_EXTRA_OPTIONS
    query = choice_judge.build_query("Q?", {"A": "x"}, "hm", task="MAT")
    assert task_spec("MAT").judge_options[0] in query.messages[0]["content"]


def test_spec_validation_names_the_task():
    good = task_spec("MAT")
    with pytest.raises(ValueError, match="TaskSpec NEW: unknown dimension"):
        TaskSpec(**{**good.__dict__, "name": "NEW", "dimension": "Other"})
    with pytest.raises(ValueError, match="TaskSpec NEW: an abstaining task needs"):
        TaskSpec(**{**good.__dict__, "name": "NEW", "abstention": ""})
    with pytest.raises(ValueError, match="at least 5"):
        TaskSpec(**{**good.__dict__, "name": "NEW", "templates": good.templates[:2]})
    with pytest.raises(KeyError, match="unknown task 'NOPE'"):
        task_spec("NOPE")
