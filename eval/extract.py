"""Choice extraction, step 1 of the paper's two-step protocol (AVTrustBench appendix B.2): heuristics.

A free-form answer is matched to an option only when the evidence is unambiguous: exactly one option
letter named (``B``, ``B)``, ``B.``, ``B,``, ``(B)``, "the answer is B"), or, when no letter is named,
exactly one option text quoted. Anything else (several options, none, a clarification request, a letter
contradicted by the text that follows it, an option and an abstention in one first sentence) is left
unmatched for step 2, the LLM judge — a heuristic that guesses would silently move accuracy, which is what CircularEval is meant to expose.

Abstention is the correct behaviour on most AVTrustBench tasks, so task-specific abstention phrases
(B.2) are data (``ABSTENTIONS``: the common ones here, each task's from its ``TaskSpec``). An abstention counts as choosing the item's
"None of the above" letter where it has one, else as the sentinel ``ABSTAIN``, which is correct exactly
when the item's answer is ``None`` (the base setting of the abstention tasks).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cavpref.data_prep.tasks import TASK_SPECS

ABSTAIN = "ABSTAIN"

# Regexes (case-insensitive, matched against the normalised response). "_common" applies to every task: the
# paper's accepted answers for a question with no correct choice in the base setting (section 4.1: "'None of
# the above', 'The choices are irrelevant', 'the video and question are mismatched' and their variants"),
# and the generic "I cannot answer" family of B.2.
ABSTENTIONS: dict[str, tuple[str, ...]] = {
    "_common": (
        r"none of the (?:above|options|choices|answers|given options|provided options)",
        (
            r"\b(?:choices|options|answers|answer choices)(?: given| provided| listed| offered)? "
            r"(?:are|is|seem|seems|look|looks)(?: all| completely| entirely)? (?:irrelevant|unrelated|not relevant)"
        ),
        r"\birrelevant (?:choices|options|answers|answer choices)\b",
        (
            r"\b(?:video|visuals?|audio|sound|clip|media)(?: and (?:the )?(?:audio|sound|video))? and (?:the )?"
            r"questions? (?:are|is) (?:mismatched|unrelated|incompatible|inconsistent|not related)"
        ),
        (
            r"\bquestions? (?:is|are) (?:mismatched|unrelated|incompatible|inconsistent|not related) "
            r"(?:with|to) (?:the )?(?:video|visuals?|audio|sound|clip|media)"
        ),
        (
            r"\b(?:video|visuals?|audio|sound|clip|media) (?:does not|doesn't|do not|don't) (?:match|fit|correspond to) "
            r"(?:the )?questions?"
        ),
        (
            r"\bquestions? (?:does not|doesn't|do not|don't) (?:match|fit|correspond to) (?:the )?"
            r"(?:video|visuals?|audio|sound|clip|media)"
        ),
        r"\bmismatch(?:ed)? between (?:the )?(?:video|visuals?|audio|sound|clip|media) and (?:the )?questions?",
        r"\bi (?:cannot|can ?not|can't|am unable to|am not able to) (?:answer|determine|tell|say)",
        r"\bunable to (?:answer|determine)",
        r"\b(?:cannot|can't|can ?not) be (?:answered|determined)",
        r"\bi (?:do not|don't) know\b",
        r"\bno idea\b",
    ),
}
# The task-specific phrases are task facts: ``TaskSpec.abstention_patterns``, data_prep/tasks/<task>.yaml.
ABSTENTIONS.update(
    {name: spec.abstention_patterns for name, spec in TASK_SPECS.items() if spec.abstention_patterns}
)

# Short abstention responses per task (``TaskSpec.abstention_response``): the extra candidate of likelihood
# scoring in the base setting and the extra options shown to the judge (B.2).
ABSTENTION_RESPONSES: dict[str, str] = {
    name: spec.abstention_response for name, spec in TASK_SPECS.items() if spec.abstention_response
}


def abstention_response(task: str) -> str | None:
    """``task``'s short abstention response; a task registered after this module was imported (a plugin
    loaded late) is read from its spec."""
    spec = TASK_SPECS.get(task)
    return ABSTENTION_RESPONSES.get(task) or (spec.abstention_response if spec else None) or None


def _task_patterns(task: str) -> tuple[str, ...]:
    spec = TASK_SPECS.get(task)
    return tuple(ABSTENTIONS.get(task) or (spec.abstention_patterns if spec else ()))


@dataclass(frozen=True)
class Extraction:
    """What a response chose: ``choice`` is an option letter, ``ABSTAIN`` or ``None`` (unparsed);
    ``method`` is "heuristic" | "judge" | "likelihood" | "unparsed"; ``rule`` says which rule decided."""

    choice: str | None
    method: str
    rule: str
    reply: str | None = None  # the judge's reply text, when a judge decided (records keep it: judge_reply)

    @property
    def parsed(self) -> bool:
        return self.choice is not None


def is_correct(choice: str | None, answer: str | None) -> bool:
    """Top-1 correctness. ``answer is None`` means the correct response is an abstention."""
    if choice is None:
        return False
    return choice == (ABSTAIN if answer is None else answer)


def abstention_patterns(task: str, extra: Mapping[str, Sequence[str]] | None = None) -> list[re.Pattern]:
    """The compiled abstention regexes of ``task`` (common ones included), plus ``extra[task]``."""
    raw = list(ABSTENTIONS["_common"]) + list(_task_patterns(task))
    if extra:
        raw += list(extra.get("_common", ())) + list(extra.get(task, ()))
    return [_compile(p) for p in raw]


_CACHE: dict[str, re.Pattern] = {}


def _compile(pattern: str) -> re.Pattern:
    if pattern not in _CACHE:
        _CACHE[pattern] = re.compile(pattern, re.IGNORECASE)
    return _CACHE[pattern]


def normalise(text: str) -> str:
    """Drop markdown emphasis and surrounding quotes, collapse whitespace."""
    text = re.sub(r"(\*{1,3}|`)(.+?)\1", r"\2", text or "")
    text = re.sub(r"\s+", " ", text).strip()
    return text.strip("\"'“”‘’ ")


# A letter after "answer / option / choice", either case ("the answer is d"); a lower-case one only when no
# word follows it ("the answer is a dog": "a" is the article).
_KEYWORD = re.compile(
    r"(?i:answer|option|choice)\s*(?:(?i:is|would be|should be)\s*)?:?\s*[(\[]?"
    r"([A-Z](?![A-Za-z0-9])|[a-z](?![A-Za-z0-9'’])(?!\s+[a-z]))"
)
# An explicit statement of the answer ("the answer is C", "Answer: (C)", "final answer: c"): the last one
# wins over letters mentioned before or after it ("Not A. The answer is C."; "The answer is B, not C."),
# unless it lists several ("the answer is A or B", "answer: A, C").
_EXPLICIT = re.compile(
    r"(?i:answer)\s*(?:(?i:is|would be|should be)\s*)?:?\s*[(\[]?"
    r"([A-Z](?![A-Za-z0-9])|[a-z](?![A-Za-z0-9'’])(?!\s+[a-z]))[)\]]?"
    r"(?!\s*(?:(?i:or|and|nor|&|/)\s|[,/&]\s*[(\[]?[A-Za-z](?![A-Za-z0-9])))"
)
_THINK_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.IGNORECASE | re.DOTALL)
_THINK_OPEN = re.compile(r"^.*</(?:think|thinking|reasoning)>", re.IGNORECASE | re.DOTALL)
_LABELED = re.compile(r"(?<![A-Za-z0-9])[(\[]([A-Z])[)\]]|(?<![A-Za-z0-9(\[])([A-Z])[).:,](?=\s|$)")
_BARE = re.compile(r"(?<![A-Za-z0-9'’(\[])([A-Z])(?![A-Za-z0-9'’)\]])")
_LINKING = {"or", "and", "nor", "vs", "versus", "is", "was", "seems", "would", "should", "looks", "because"}
_IS_CORRECT = re.compile(r"(?<![A-Za-z0-9])([A-Z]) (?:is|seems) (?:the )?(?:correct|right|answer|best)")


def strip_reasoning(text: str | None) -> str:
    """The response without its reasoning blocks (``<think>…</think>``, ``<reasoning>…</reasoning>``,
    and everything up to a closing tag whose opening tag a chat template already consumed). Letters
    named while thinking are not the answer, for every benchmark."""
    text = _THINK_BLOCK.sub(" ", text or "")
    return _THINK_OPEN.sub(" ", text).strip()


def explicit_answer(text: str, letters: Sequence[str]) -> str | None:
    """The letter of the last explicit "the answer is X" statement, if it names one of ``letters``."""
    found = [m.upper() for m in _EXPLICIT.findall(text)]
    found = [x for x in found if x in set(letters)]
    return found[-1] if found else None


def letter_mentions(text: str, letters: Sequence[str]) -> set[str]:
    """Option letters a response names. "A" and "I" followed by a lower-case word ("A man", "I think")
    are English words, not labels, unless that word links labels ("A or B", "A is correct")."""
    valid = set(letters)
    found = {m.upper() for m in _KEYWORD.findall(text)} | set(_IS_CORRECT.findall(text))
    found |= {a or b for a, b in _LABELED.findall(text)}
    for m in _BARE.finditer(text):
        following = re.match(r"\s+([a-z]+)", text[m.end() :])
        if m.group(1) in "AI" and following and following.group(1) not in _LINKING:
            continue
        found.add(m.group(1))
    return found & valid


def _text_key(text: str) -> str:
    text = text.replace("_", " ").lower()
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", text)).strip()


def option_text_mentions(text: str, options: Mapping[str, str]) -> set[str]:
    """Letters whose option text occurs in the response as whole words. An option whose text is inside
    another matched option's text ("Speech" in "Speech is followed by Meow") does not count separately."""
    hay = f" {_text_key(text)} "
    keys = {letter: _text_key(t) for letter, t in options.items() if _text_key(t)}
    hits = {letter for letter, k in keys.items() if f" {k} " in hay}
    return {
        a
        for a in hits
        if not any(a != b and f" {keys[a]} " in f" {keys[b]} " and keys[a] != keys[b] for b in hits)
    }


# A negation right before an abstention phrase ("the answer is not None of the above"): no abstention.
_NEGATED = re.compile(
    r"(?:\b(?:not|never|rather than|instead of)|n['’]t)\s+(?:(?:that|just|simply|really|exactly)\s+)?$",
    re.IGNORECASE,
)


def _option_label(letter: str, option: str) -> str:
    """The regex of ``letter``'s labelled option text in every label style the benchmarks' prompts write:
    "A. text" (AVTrustBench, AURA, MMAR, TraceAV), "(A) text" (a video benchmark's release), "A) text", "[A] text",
    "A: text"."""
    return rf"(?<![A-Za-z0-9])[(\[]?{re.escape(letter)}[).:\]]\s*{re.escape(normalise(option))}"


def _without_prompt_lines(text: str, options: Mapping[str, str], prompt: str) -> str:
    """``text`` without the prompt lines of three words or more it repeats (the question, the instruction
    "… respond with None of the above.") other than option lines, in any label style: those are what a
    reply names. Only "A. text" used to count as an option line, so a reply repeating such a
    "(A) Drawing on a tablet" lost it and read as "names no option"."""
    labels = [re.compile(_option_label(x, t), re.IGNORECASE) for x, t in options.items()]
    for line in (normalise(x) for x in prompt.splitlines()):
        if len(line.split()) >= 3 and not any(label.fullmatch(line) for label in labels):
            text = re.sub(re.escape(line), " ", text, flags=re.IGNORECASE)
    return text


def _without_option_lines(text: str, options: Mapping[str, str]) -> str:
    """``text`` without labelled option texts ("E. None of the above", "(E) None of the above")."""
    for letter, option in options.items():
        text = re.sub(_option_label(letter, option), " ", text, flags=re.IGNORECASE)
    return text


def _abstention(
    text: str, options: Mapping[str, str], prompt: str, patterns: Sequence[re.Pattern]
) -> tuple[str, bool, str]:
    """(``text`` without the prompt lines it echoes and its negated abstention phrases, whether it
    abstains, that text without its abstention phrases too). A phrase counts only where the response says
    it, not where it echoes the option list or the instruction, nor where it negates it ("not None of the
    above; it is Three" names Three): any mention used to be scored as an abstention, which made an echo of
    the prompt correct on every abstaining task. The third text is where option texts are looked for, so
    that "No" in "No option is correct" is no option."""
    text = normalise(_without_prompt_lines(text, options, prompt))
    own = _without_option_lines(text, options)
    abstained, said = False, []
    for pattern in patterns:
        for m in pattern.finditer(own):
            if _NEGATED.search(own[: m.start()]):
                text = text.replace(m.group(0), " ")
            else:
                abstained = True
                said.append(m.group(0))
    rest = text
    for phrase in said:
        rest = rest.replace(phrase, " ")
    return text, abstained, rest


# Where a reply's first sentence ends: ". ", "! ", "? ", "; " or an opening bracket after a space ("Three
# (None of the above would be wrong)").
_LEAD_END = re.compile(r"[.!?;](?=\s|$)|\s[(\[]")


def _lead(text: str, options: Mapping[str, str], abstain: str, patterns: Sequence[re.Pattern]) -> str | None:
    """What a reply's first sentence says when it says one thing only: an option's letter (``ABSTAIN`` or
    the "None of the above" letter for an abstention), else None. It settles a reply that names one option
    and also abstains: the answer is the one stated first ("Three. (None of the above would be wrong.)" is
    Three; "None of the above. Three would be wrong." abstains); a first sentence that holds both ("Three,
    but I cannot answer") is left to step 2."""
    end = _LEAD_END.search(text.strip())
    lead = text.strip()[: end.start()] if end else text.strip()
    lead, abstains, rest = _abstention(lead, options, "", patterns)
    named = letter_mentions(lead, list(options)) | option_text_mentions(_LABELED.sub(" ", rest), options)
    if abstains:
        return abstain if not named - {abstain} else None
    final = explicit_answer(lead, list(options))
    return final if final is not None else (next(iter(named)) if len(named) == 1 else None)


def match_choice(
    response: str,
    options: Mapping[str, str],
    *,
    task: str,
    abstain_letter: str | None = None,
    extra_abstentions: Mapping[str, Sequence[str]] | None = None,
    prompt: str = "",
) -> Extraction:
    """Step 1 of B.2. Returns an Extraction with ``method="heuristic"`` or ``"unparsed"``. ``prompt`` (the
    text the model was shown) lets an echoed instruction be told from an abstention. A reply that names
    one option (by letter or by text) and also abstains is settled by its first sentence (``_lead``), the
    same for a letter and for an option text: the text used to be looked for only after the abstention
    had already been returned."""
    text = normalise(strip_reasoning(response))
    if not text:
        return Extraction(None, "unparsed", "empty response")
    abstain = ABSTAIN if abstain_letter is None else abstain_letter
    patterns = abstention_patterns(task, extra_abstentions)
    text, abstained, rest = _abstention(text, options, prompt, patterns)
    letters = letter_mentions(text, list(options))
    final = explicit_answer(text, list(options))

    def conflict(choice: str, rule: str, unparsed: str) -> Extraction:
        """``choice`` named and an abstention said: the first sentence decides, else step 2."""
        lead = _lead(text, options, abstain, patterns)
        if lead == choice:
            return Extraction(choice, "heuristic", f"{rule} (stated first; an abstention mentioned after)")
        if lead == abstain:
            return Extraction(abstain, "heuristic", "abstention (stated first)")
        return Extraction(None, "unparsed", unparsed)

    if final is not None and len(letters) > 1:
        if abstained and final != abstain_letter:
            return conflict(final, "explicit answer", f"states answer {final} but also abstains")
        return Extraction(final, "heuristic", "explicit answer")
    if len(letters) == 1:
        (letter,) = letters
        texts = option_text_mentions(_LABELED.sub(" ", rest), options)
        if texts and letter not in texts:
            return Extraction(None, "unparsed", f"names option {letter} but quotes {sorted(texts)}")
        if abstained and letter != abstain_letter:
            return conflict(letter, "letter", f"names option {letter} but also abstains")
        return Extraction(letter, "heuristic", "letter")
    if letters and not abstained:
        return Extraction(None, "unparsed", f"names several options {sorted(letters)}")
    texts = option_text_mentions(rest, options)
    if abstained:
        named = texts - {abstain}
        if len(named) == 1 and not letters:
            (quoted,) = named
            return conflict(quoted, "option text", f"quotes option {quoted} but also abstains")
        if named and not letters:
            return Extraction(None, "unparsed", f"quotes options {sorted(named)} but also abstains")
        return Extraction(abstain, "heuristic", "abstention")
    if len(texts) == 1:
        return Extraction(next(iter(texts)), "heuristic", "option text")
    if texts:
        return Extraction(None, "unparsed", f"quotes several options {sorted(texts)}")
    return Extraction(None, "unparsed", "names no option")
