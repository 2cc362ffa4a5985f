"""Hostile-input pass two (issue 40, "scores that are wrong"): a reply that only echoes the prompt or negates
an abstention is no abstention (#6); ..."""

import pytest
from cavpref.data_prep.tasks import TASK_SPECS
from cavpref.data_prep.tasks.templates import TEMPLATES
from cavpref.eval.extract import ABSTAIN, is_correct, match_choice
from cavpref.prompts import render_prompt

OPTIONS = {"A": "acoustic_guitar", "B": "Piano", "C": "Three", "D": "Thirty-three", "E": "None of the above"}
BASE = {k: v for k, v in OPTIONS.items() if k != "E"}
ABSTAINING = sorted(t for t, spec in TASK_SPECS.items() if spec.abstains)


def _prompts(task, options, abstain_letter):
    """Every (question, instruction) template of ``task`` rendered as the evaluator shows it."""
    return [
        render_prompt(t.question.format(question="How many?"), options, t.instruction, abstain_letter)
        for t in TEMPLATES[task]
    ]


@pytest.mark.parametrize("task", ABSTAINING)
def test_an_echoed_prompt_or_a_negated_abstention_is_no_abstention(task):
    """Case 6: any mention of "None of the above" used to be an abstention, so echoing the option list,
    repeating the instruction or saying "not None of the above" was correct on every abstaining task."""
    for prompt in _prompts(task, OPTIONS, "E"):
        lines = prompt.splitlines()
        echo_options = "\n".join(lines[1:6])
        echo_instruction = lines[6]
        for reply in (echo_options, echo_instruction, f"{echo_instruction}\n{echo_options}", prompt):
            got = match_choice(reply, OPTIONS, task=task, abstain_letter="E", prompt=prompt)
            assert got.choice != "E", (reply, got)
        got = match_choice(
            "The answer is not None of the above; it is Three.",
            OPTIONS,
            task=task,
            abstain_letter="E",
            prompt=prompt,
        )
        assert got.choice != "E", got
        # a real abstention after the echo still abstains, and so does the option's own line
        assert (
            match_choice(
                f"{echo_instruction} None of the above.",
                OPTIONS,
                task=task,
                abstain_letter="E",
                prompt=prompt,
            ).choice
            == "E"
        )
        assert (
            match_choice("E. None of the above", OPTIONS, task=task, abstain_letter="E", prompt=prompt).choice
            == "E"
        )
    # base setting (no "None of the above" option; the correct answer is to abstain)
    base = render_prompt("How many?", BASE)
    got = match_choice("The answer is not None of the above; it is Three.", BASE, task=task, prompt=base)
    assert got.choice == "C" and not is_correct(got.choice, None)
    assert match_choice("It isn't none of the options: B.", BASE, task=task, prompt=base).choice == "B"
    assert match_choice("None of the above.", BASE, task=task, prompt=base).choice == ABSTAIN
