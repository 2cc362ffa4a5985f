"""THE prompt renderer and the CircularEval rotation, shared by training data and evaluation.

A model must be trained on exactly the text it is tested on. data_prep renders every training row with
:func:`render_prompt` (through :func:`rotated_view` when it shows the row under a rotation) and the
evaluator renders every CircularEval pass with the same two functions, so a training row and the
evaluation pass of the same item under the same rotation are byte-identical
(``tests/test_prompts.py``). They live in the core because both stages need them and the core may not
import either stage.

Layout of a prompt (the paper fixes no wording beyond the B.1 instruction, which data_prep stores per
item)::

    <question>
    A. <option>
    B. <option>
    ...
    <instruction>     (instruction setting; "{abstain_letter}" in it becomes the current letter)
    <post_prompt>     (optional, evaluation only, e.g. "Answer with the option's letter.")

Rotation (MMBench CircularEval; AVTrustBench App. B.3): pass ``k`` moves every option's text up by ``k``
letters ("None of the above" too, unless pinned), so no letter is special.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Protocol


class PromptItem(Protocol):
    """What rendering needs of an item (``cavpref.data.BenchmarkItem`` has it)."""

    question: str
    options: dict[str, str]
    instruction: str
    abstain_letter: str | None


def render_prompt(
    question: str,
    options: Mapping[str, str],
    instruction: str = "",
    abstain_letter: str | None = None,
    post_prompt: str = "",
) -> str:
    """The prompt text: question, one 'L. text' line per option, the instruction (``{abstain_letter}``
    filled with the current "None of the above" letter), then ``post_prompt`` when given."""
    lines = [question.strip(), *(f"{letter}. {text}" for letter, text in options.items())]
    if instruction:
        lines.append(instruction.replace("{abstain_letter}", abstain_letter or ""))
    if post_prompt:
        lines.append(post_prompt)
    return "\n".join(lines)


def rotate(
    options: Mapping[str, str], k: int, *, pin: str | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """Options after ``k`` circular shifts, and the map old letter -> new letter.

    Letters keep their order; texts move up by ``k`` (pass 1 of A,B,C,D shows B's text under A).
    ``pin`` (e.g. the "None of the above" letter) keeps its letter and text and the others rotate around it.
    """
    letters = list(options)
    if pin is not None and pin not in options:
        raise ValueError(f"pinned letter {pin!r} is not among options {letters}")
    movable = [x for x in letters if x != pin]
    m = len(movable)
    if m == 0:
        return dict(options), {x: x for x in letters}
    new_of = {movable[(i + k) % m]: movable[i] for i in range(m)}
    if pin is not None:
        new_of[pin] = pin
    rotated = {new_of[old]: options[old] for old in letters}
    return {x: rotated[x] for x in letters}, new_of


def n_passes(options: Mapping[str, str], *, circular: bool = True, pin: str | None = None) -> int:
    """How many passes the item needs: 1 for vanilla, else one per rotatable option."""
    if not circular:
        return 1
    return max(1, len(options) - (1 if pin is not None else 0))


def rotated_view(
    item: PromptItem, k: int, *, pin: str | None = None, post_prompt: str = ""
) -> tuple[dict[str, str], dict[str, str], str]:
    """Pass ``k`` of CircularEval for one item: the rotated options, the map old letter -> new letter, and
    the prompt. Training rows and evaluation passes both come from here."""
    options, new_of = rotate(item.options, k, pin=pin)
    abstain = None if item.abstain_letter is None else new_of[item.abstain_letter]
    return options, new_of, render_prompt(item.question, options, item.instruction, abstain, post_prompt)


def rotate_response(response: str | None, new_of: Mapping[str, str]) -> str | None:
    """A response under rotated options: "B. Piano" -> "<new letter of B>. Piano"; abstention sentences
    (and None) are unchanged."""
    letter, dot, text = (response or "").partition(". ")
    return f"{new_of[letter]}. {text}" if dot and letter in new_of else response


def rotation_for(seed: int, row_id: str, options: Mapping[str, str]) -> int:
    """The rotation a training row is shown under: drawn from (seed, id) only, so it does not depend on row
    order, sharding or process count."""
    return random.Random(f"{seed}:{row_id}").randrange(n_passes(options))
