"""A reply that names one option and also mentions an abstention is settled by what it states first, for an
option's text as for its letter (issue 54, item 6): "Three. (None of the above would be wrong.)" chose Three,
yet was scored as the abstention, because option texts were looked for only after an abstention had been
returned. Each abstaining task's own prompts, as the evaluator renders them."""

import pytest

from cavpref.data_prep.tasks import TASK_SPECS
from cavpref.eval.extract import ABSTAIN, is_correct, match_choice
from cavpref.prompts import render_prompt

OPTIONS = {"A": "acoustic_guitar", "B": "Piano", "C": "Three", "D": "Thirty-three", "E": "None of the above"}
BASE = {k: v for k, v in OPTIONS.items() if k != "E"}
ABSTAINING = sorted(t for t, spec in TASK_SPECS.items() if spec.abstains)


def _cases(task):
    """(options, abstain letter, prompt): the perturbed setting's "None of the above" option, and the base
    setting's none (the abstention is then ``ABSTAIN``), under every template of ``task``."""
    for options, letter in ((OPTIONS, "E"), (BASE, None)):
        for t in TASK_SPECS[task].templates:
            question = t.question.format(question="How many dogs bark?")
            yield options, letter, render_prompt(question, options, t.instruction, letter)


def _choice(reply, task, options, letter, prompt):
    return match_choice(reply, options, task=task, abstain_letter=letter, prompt=prompt)


@pytest.mark.parametrize("task", ABSTAINING)
def test_an_option_stated_first_wins_over_a_later_abstention_mention(task):
    for options, letter, prompt in _cases(task):
        for reply in (
            "Three. (None of the above would be wrong.)",
            "Three. None of the above would be wrong.",
            "Three (none of the options is a better fit).",
            "C. None of the above would be wrong.",
            "The answer is C, not A. None of the above would be wrong.",
        ):
            got = _choice(reply, task, options, letter, prompt)
            assert got.choice == "C" and "stated first" in got.rule, (reply, got)
            assert not is_correct(got.choice, None)  # the base setting's abstention answer: wrong


@pytest.mark.parametrize("task", ABSTAINING)
def test_an_abstention_stated_first_abstains_and_both_in_one_sentence_is_left_to_the_judge(task):
    for options, letter, prompt in _cases(task):
        abstain = letter or ABSTAIN
        for reply in ("None of the above. Three would be wrong.", "None of the above. C would be wrong."):
            assert _choice(reply, task, options, letter, prompt).choice == abstain, reply
        for reply in ("Three, but none of the above fits better", "I cannot answer, maybe A"):
            got = _choice(reply, task, options, letter, prompt)
            assert got.choice is None and "also abstains" in got.rule, (reply, got)
        # an abstention alone, or naming several options inside it, still abstains
        assert _choice("None of the above.", task, options, letter, prompt).choice == abstain
        assert (
            _choice("None of the options A, B or C is right", task, options, letter, prompt).choice == abstain
        )


def test_an_option_text_inside_the_abstention_phrase_is_no_option():
    """ "No" in "No option is correct" (ICIT's abstention) is not the option "No"."""
    yn = {"A": "Yes", "B": "No"}
    prompt = render_prompt("Is a dog barking?", yn)
    assert match_choice("No option is correct.", yn, task="ICIT", prompt=prompt).choice == ABSTAIN
    assert match_choice("No. The audio is missing.", yn, task="MAT", prompt=prompt).choice == "B"
    assert match_choice("The audio is missing. No.", yn, task="MAT", prompt=prompt).choice == ABSTAIN
