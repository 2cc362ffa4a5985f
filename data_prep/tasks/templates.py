"""Question / instruction templates and response phrasings of the nine tasks (paper Tab. 6, A.2, B.1/B.2).

The paper evaluates each task with "up to ~5 different prompts" and shows that accuracy moves with the
prompt (Tab. 12), so every task has at least five (question, instruction) pairs; a generator picks one
deterministically from (seed, task, record key) and records its index as ``template_id``. Everything the
model reads or is trained to say lives here as data, so wording changes never touch generator logic.

Instructions never name an option letter: CircularEval rotates the options, and an instruction saying
"answer (E)" would then point at the wrong one.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PromptTemplate:
    question: str  # may contain {question}: the source question (QA tasks)
    instruction: str  # appended in the instruction setting only (paper B.1)


_QA_QUESTIONS = (
    "{question}",
    "Watch the video and listen to its audio. {question}",
    "Answer the question about the video: {question}",
    "Using both what you see and what you hear, answer the question. {question}",
    "Question: {question}",
)


def _qa(*instructions: str) -> tuple[PromptTemplate, ...]:
    return tuple(PromptTemplate(q, i) for q, i in zip(_QA_QUESTIONS, instructions, strict=True))


_ORDER_QUESTIONS = (
    "What is the sequence of events in the video?",
    "In which order do the events happen in this clip?",
    "Which option describes the order of the events you see and hear?",
    "Describe the order of the two events in the video.",
    "Which of the following correctly orders the events in the clip?",
)

_CAT_QUESTIONS = (
    "Which description matches the sounds in the clip?",
    "What do you hear in this clip?",
    "Which option correctly describes the two sounds in the video?",
    "How are the two sounds in the clip best described?",
    "Which statement about the audio of the video is true?",
)

TEMPLATES: dict[str, tuple[PromptTemplate, ...]] = {
    "MCIT": _qa(
        "If the correct answer is not present, respond with None of the above.",
        "If all the options are incorrect, answer None of the above.",
        "If none of the options is correct, choose None of the above.",
        "The correct answer may be missing from the options; if it is, answer None of the above.",
        "Only pick an option if it is correct; otherwise answer None of the above.",
    ),
    "ICIT": _qa(
        "If the correct answer is not present, respond with None of the above.",
        "If the options have nothing to do with the question, answer None of the above.",
        "If no option is a sensible answer, choose None of the above.",
        "The options may be irrelevant to the question; if they are, answer None of the above.",
        "Only pick an option if it answers the question; otherwise answer None of the above.",
    ),
    "MVIT": _qa(
        "If the correct answer is not present, respond with None of the above.",
        "If the video does not match the audio or the question, answer None of the above.",
        "If what you see is incompatible with the question, choose None of the above.",
        "The video may not belong to this audio; if so, answer None of the above.",
        "Only pick an option if the video supports it; otherwise answer None of the above.",
    ),
    "MAIT": _qa(
        "If the correct answer is not present, respond with None of the above.",
        "If the audio does not match the video or the question, answer None of the above.",
        "If what you hear is incompatible with the question, choose None of the above.",
        "The audio may not belong to this video; if so, answer None of the above.",
        "Only pick an option if the audio supports it; otherwise answer None of the above.",
    ),
    "MVT": _qa(
        "If the correct answer is not present, respond with None of the above.",
        "If the video needed to answer is missing, answer None of the above.",
        "If you cannot see what the question asks about, choose None of the above.",
        "The video stream may be missing; if so, answer None of the above.",
        "Only pick an option if both the video and the audio support it; otherwise answer None of the above.",
    ),
    "MAT": _qa(
        "If the correct answer is not present, respond with None of the above.",
        "If the audio needed to answer is missing, answer None of the above.",
        "If you cannot hear what the question asks about, choose None of the above.",
        "The audio stream may be missing; if so, answer None of the above.",
        "Only pick an option if both the video and the audio support it; otherwise answer None of the above.",
    ),
    "CLEAN": _qa(
        "If the correct answer is not present, respond with None of the above.",
        "If all the options are incorrect, answer None of the above.",
        "If none of the options is correct, choose None of the above.",
        "The correct answer may be missing from the options; if it is, answer None of the above.",
        "Only pick an option if it is correct; otherwise answer None of the above.",
    ),
    "COT-Stitch": tuple(
        PromptTemplate(q, i)
        for q, i in zip(
            _ORDER_QUESTIONS,
            (
                "If none of the options describes the clip, respond with None of the above.",
                "If all the options are incorrect, answer None of the above.",
                "If no option matches the order of the events, choose None of the above.",
                "If the clip does not fit any option, answer None of the above.",
                "Only pick an option if it is correct; otherwise answer None of the above.",
            ),
            strict=True,
        )
    ),
    "COT-Swap": tuple(
        PromptTemplate(q, i)
        for q, i in zip(
            _ORDER_QUESTIONS,
            (
                "If the correct answer is not present, respond with None of the above.",
                "If the audio and the video do not agree, answer None of the above.",
                "If the sounds and the sights are incompatible, choose None of the above.",
                "The audio may not belong to the video; if so, answer None of the above.",
                "Only pick an option both streams support; otherwise answer None of the above.",
            ),
            strict=True,
        )
    ),
    "CAT": tuple(
        PromptTemplate(q, i)
        for q, i in zip(
            _CAT_QUESTIONS,
            (
                "If none of the options describes the clip, respond with None of the above.",
                "If all the options are incorrect, answer None of the above.",
                "If no option binds the attributes correctly, choose None of the above.",
                "If the clip does not fit any option, answer None of the above.",
                "Only pick an option if it is correct; otherwise answer None of the above.",
            ),
            strict=True,
        )
    ),
}

# The base-setting abstention sentences are task facts: ``TaskSpec.abstention`` in each task's module.

# Event-order phrasings for COT options: (forward, preposition-replaced). forward(a, b) says "a, then b";
# replaced(a, b) keeps the words and the mention order but says "b, then a" (the paper's "replace the
# preposition" negative).
ORDER_PHRASES: tuple[tuple[str, str], ...] = (
    ("{a} is followed by {b}.", "{a} is preceded by {b}."),
    ("{a} happens before {b}.", "{a} happens after {b}."),
    ("First {a}, then {b}.", "First {b}, then {a}."),
    ("{a}, and after that {b}.", "{a}, and before that {b}."),
    ("{b} comes after {a}.", "{b} comes before {a}."),
)
SIMULTANEOUS: tuple[str, ...] = (
    "Both of them occur at the same time.",
    "{a} and {b} happen at the same time.",
    "Both events occur simultaneously.",
)

# CAT (Winoground-style) bindings: the same words, different attribute bindings. {p}/{q}: the two events
# in mention order; {hi}/{lo}: the attribute words bound to them.
BINDINGS: tuple[str, ...] = (
    "{p} is {hi} and {q} is {lo}.",
    "A {hi} sound of {p} and a {lo} sound of {q}.",
    "The {p} sound is {hi}, the {q} sound is {lo}.",
)
EQUAL_BINDINGS: tuple[str, ...] = (
    "{p} and {q} are equally {hi}.",
    "Both {p} and {q} are {hi}.",
)
ATTRIBUTE_WORDS: dict[str, tuple[tuple[str, str], ...]] = {
    "loudness": (("loud", "quiet"), ("loud", "soft"), ("strong", "faint")),
    "duration": (("long", "short"), ("lasting", "brief")),
}
