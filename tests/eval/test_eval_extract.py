"""Step-1 choice extraction (paper B.2) and CircularEval (B.3): pure functions, hand-checked cases."""

import pytest

from cavpref.data_prep.tasks import TASK_SPECS
from cavpref.eval.circular import circular_outcome, n_passes, next_pass, rotate
from cavpref.eval.extract import ABSTAIN, ABSTENTIONS, is_correct, match_choice

YN = {"A": "Yes", "B": "No"}
FOUR = {"A": "acoustic_guitar", "B": "Piano", "C": "Three", "D": "Thirty-three", "E": "None of the above"}


@pytest.mark.parametrize(
    "response,expected",
    [
        ("A", "A"),
        ("B)", "B"),
        ("B.", "B"),
        ("B, because the drum is louder", "B"),
        ("(B)", "B"),
        ("(B) No", "B"),
        ("The answer is A", "A"),
        ("Answer: B", "B"),
        ("**B**", "B"),
        ("I think B is correct", "B"),
        ("A) Yes", "A"),
        ("No, there is no guitar.", "B"),
        ("yes", "A"),
    ],
)
def test_single_option_is_matched(response, expected):
    got = match_choice(response, YN, task="CAT")
    assert (got.choice, got.method) == (expected, "heuristic")


@pytest.mark.parametrize(
    "response,rule",
    [
        ("A or B", "several options"),
        ("Yes and no", "several options"),
        ("A) No", "quotes ['B']"),
        ("Apologies, can you please clarify the question?", "names no option"),
        ("A man is playing.", "names no option"),
        ("", "empty"),
        ("   ", "empty"),
        ("E", "names no option"),  # E is not an option of a yes/no item
    ],
)
def test_ambiguous_or_missing_is_left_for_step_two(response, rule):
    got = match_choice(response, YN, task="CAT")
    assert got.choice is None and got.method == "unparsed" and rule in got.rule


def test_option_text_prefers_the_longest_contained_option_and_reads_underscores():
    assert match_choice("thirty-three of them", FOUR, task="MCIT", abstain_letter="E").choice == "D"
    assert match_choice("The acoustic guitar.", FOUR, task="MCIT", abstain_letter="E").choice == "A"


def test_abstention_maps_to_the_none_letter_or_the_abstain_sentinel():
    # instruction setting: the item has a "None of the above" option E
    assert match_choice("None of the above.", FOUR, task="MCIT", abstain_letter="E").choice == "E"
    assert match_choice("E. None of the above", FOUR, task="MCIT", abstain_letter="E").choice == "E"
    assert (
        match_choice("The provided options are incorrect.", FOUR, task="MCIT", abstain_letter="E").choice
        == "E"
    )
    # base setting: no such option
    assert match_choice("The audio is missing.", YN, task="MAT").choice == ABSTAIN
    assert match_choice("The video is missing, so I cannot tell.", YN, task="MVT").choice == ABSTAIN
    assert match_choice("These options are irrelevant to the question.", YN, task="ICIT").choice == ABSTAIN
    assert match_choice("The visual is incompatible with the question", YN, task="MVIT").choice == ABSTAIN
    assert match_choice("The audio is incompatible with the video.", YN, task="MAIT").choice == ABSTAIN
    # B.2's own wordings of the extra options
    assert (
        match_choice("The visual/audio is incompatible with the question.", YN, task="MVIT").choice == ABSTAIN
    )
    assert match_choice("The visual and the audio are incompatible.", YN, task="COT-Swap").choice == ABSTAIN
    assert match_choice("No option is correct.", YN, task="ICIT").choice == ABSTAIN
    assert match_choice("I cannot answer.", YN, task="CAT").choice == ABSTAIN  # common to every task
    # an abstention phrase is task-specific: "the audio is missing" is no abstention on MVT
    assert match_choice("The audio is missing.", YN, task="MVT").choice is None
    # several letters named inside an abstention still abstain
    assert (
        match_choice(
            "None of the options A, B, C or D is right", FOUR, task="MCIT", abstain_letter="E"
        ).choice
        == "E"
    )


def test_letter_plus_abstention_is_a_conflict():
    got = match_choice("I cannot answer, maybe A", FOUR, task="MCIT", abstain_letter="E")
    assert got.choice is None and "abstains" in got.rule


def test_abstention_lists_are_extendable_per_task():
    extra = {"MAT": [r"\bit is silent\b"]}
    assert match_choice("It is silent.", YN, task="MAT").choice is None
    assert match_choice("It is silent.", YN, task="MAT", extra_abstentions=extra).choice == ABSTAIN
    assert "MAT" in ABSTENTIONS and "_common" in ABSTENTIONS


def test_is_correct_handles_abstention_answers():
    assert is_correct("B", "B") and not is_correct("A", "B") and not is_correct(None, "B")
    assert is_correct(ABSTAIN, None) and not is_correct("A", None) and not is_correct(None, None)


# ---------------------------------------------------------------------------------------------- circular


def test_rotate_shifts_texts_and_maps_letters():
    opts = {"A": "w", "B": "x", "C": "y", "D": "z"}
    r1, m1 = rotate(opts, 1)
    assert r1 == {"A": "x", "B": "y", "C": "z", "D": "w"}
    assert m1 == {"B": "A", "C": "B", "D": "C", "A": "D"}
    assert rotate(opts, 4)[0] == opts and rotate(opts, 0)[1] == {k: k for k in opts}
    # every text visits every letter exactly once over the N passes
    assert {rotate(opts, k)[1]["C"] for k in range(4)} == set(opts)


def test_rotate_can_pin_the_none_option():
    opts = {"A": "w", "B": "x", "C": "y", "D": "None of the above"}
    r, m = rotate(opts, 1, pin="D")
    assert r == {"A": "x", "B": "y", "C": "w", "D": "None of the above"} and m["D"] == "D"
    assert n_passes(opts, pin="D") == 3 and n_passes(opts) == 4 and n_passes(opts, circular=False) == 1
    with pytest.raises(ValueError, match="pinned letter 'E'"):
        rotate(opts, 1, pin="E")


def test_early_stopping_and_outcomes():
    assert next_pass([], 4) == 0 and next_pass([True, True], 4) == 2
    assert next_pass([True, False], 4) is None and next_pass([True] * 4, 4) is None
    lost = circular_outcome([True, False], 4)
    assert (lost.vanilla, lost.solved, lost.passes_run, lost.passes_saved) == (True, False, 2, 2)
    won = circular_outcome([True] * 4, 4)
    assert won.solved and won.passes_saved == 0
    assert circular_outcome([False], 5).passes_saved == 4
    with pytest.raises(ValueError, match="undecided"):
        circular_outcome([True], 4)


# ---------------------------------------------------------------------------------------------- the paper's abstentions

# Section 4.1: "For QA pairs with no correct choice standard accepted answers are 'None of the above', 'The
# choices are irrelevant', 'the video and question are mismatched' and their variants (in the base setting)".
PAPER_ABSTENTIONS = (
    "None of the above.",
    "None of the options.",
    "The choices are irrelevant.",
    "The options are irrelevant to the question.",
    "These answer choices seem unrelated.",
    "Irrelevant choices.",
    "The video and question are mismatched.",
    "The video and the question are mismatched.",
    "The audio and the question are unrelated.",
    "The question is mismatched with the video.",
    "The video does not match the question.",
    "There is a mismatch between the video and the question.",
)
# B.2's task-specific options (the judge's extra options), each accepted on its own task
TASK_ABSTENTIONS = {
    "MCIT": ("The provided options are incorrect.", "I cannot answer."),
    "ICIT": ("No option is correct.", "Irrelevant options."),
    "MVIT": ("The visual is incompatible with the question.",),
    "MAIT": ("The audio is incompatible with the question.",),
    "COT-Swap": ("The visual and audio are incompatible.",),
    "MAT": ("The audio is missing.",),
    "MVT": ("The video is missing.",),
}
ABSTAINING = tuple(t for t, spec in sorted(TASK_SPECS.items()) if spec.abstains)
BASE = {k: v for k, v in FOUR.items() if k != "E"}  # the base setting: no "None of the above" option


def test_the_abstaining_tasks_are_those_the_paper_lists():
    assert set(ABSTAINING) == set(TASK_ABSTENTIONS)


@pytest.mark.parametrize("task", ABSTAINING)
@pytest.mark.parametrize("phrase", PAPER_ABSTENTIONS)
def test_every_paper_abstention_is_right_on_every_abstaining_task(task, phrase):
    """Base setting: no correct option, no "None of the above" option; every listed phrase is an abstention
    and so right, on every task whose answer is to abstain (MCIT used to score "The choices are
    irrelevant." wrong without a judge)."""
    ext = match_choice(phrase, BASE, task=task, abstain_letter=None)
    assert (ext.choice, ext.method) == (ABSTAIN, "heuristic"), ext
    assert is_correct(ext.choice, None)


@pytest.mark.parametrize("task, phrase", [(t, p) for t, ps in TASK_ABSTENTIONS.items() for p in ps])
def test_each_task_accepts_its_own_b2_abstentions(task, phrase):
    ext = match_choice(phrase, BASE, task=task, abstain_letter=None)
    assert ext.choice == ABSTAIN and is_correct(ext.choice, None), ext
    # in the instruction setting the same words choose the item's "None of the above" letter
    assert match_choice(phrase, FOUR, task=task, abstain_letter="E").choice == "E"


@pytest.mark.parametrize("phrase", PAPER_ABSTENTIONS)
def test_an_abstention_on_an_answerable_question_is_wrong(phrase):
    ext = match_choice(phrase, BASE, task="CLEAN", abstain_letter=None)
    assert ext.choice == ABSTAIN and not is_correct(ext.choice, "B")


@pytest.mark.parametrize(
    "text", ["The video and audio are in sync.", "The question asks about the violin.", "A match is lit."]
)
def test_plain_answers_are_not_abstentions(text):
    assert match_choice(text, BASE, task="MCIT", abstain_letter=None).choice != ABSTAIN
