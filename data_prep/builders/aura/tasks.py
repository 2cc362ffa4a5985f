"""AURA's six tasks as the builder runs them: media layout, inputs, questions per call, and the prompt.

What each task is comes from the paper (Sec. 3.1, App. A.2) and what its released generator consumed
(``rishieraj/aura``, ``scripts/qa_generation/*_generation.py``: which captions, how many questions per call,
the ground truth given to the model). The wording of every prompt and example is ours. ``category`` is the
released ``category`` string ``cavpref eval aura`` reads.

Layouts (the media one question is about, all ``MediaSpec`` operations):

* ``single``   one trimmed clip (CR, UANS: the short window; TPR: the long one);
* ``sync``     the long window, aligned or with its sound track shifted (TSA; half of the videos each);
* ``stack``    two short windows of two videos stacked top / bottom (ID);
* ``sequence`` a novice's and an expert's long windows one after the other, in a seeded order (PSP).
"""

from __future__ import annotations

from dataclasses import dataclass

PROMPT_VERSION = "aura-builder-1"

COMMON = """You write multiple-choice questions for an audio-visual reasoning benchmark. You receive text
descriptions of a video clip: what is seen (a visual description), what is heard (an audio description) and,
when given, what is said (a speech transcript). The descriptions may be imperfect: trust the visual
description for objects, people, clothing, colours and positions, and the audio description and transcript
for the character of sounds and for speech.

Rules for every question:
- It must need both the sound and the picture: neither alone is enough to answer it.
- Four options A, B, C, D with exactly one correct; wrong options are plausible, similar in length and style.
- "gold_reasoning" explains the correct answer from the audio-visual evidence, written as by someone watching
  and listening to the video. Never mention descriptions, captions, transcripts or ground-truth labels.

Reply with JSON only, no prose: a list of {n} objects, each
{{"question": str, "options": {{"A": str, "B": str, "C": str, "D": str}}, "correct_answer_key": "A"|"B"|"C"|"D",
"gold_reasoning": str}}."""


@dataclass(frozen=True)
class AuraTask:
    code: str  # the task code of AURA's Table 2 (cavpref.eval reports per code)
    category: str  # the released ``category`` value
    per_call: int  # questions one generator call returns (as the released generators ask)
    window: str  # "short" | "long": the clip length of the task's media
    layout: str  # "single" | "sync" | "stack" | "sequence" (module docstring)
    transcript: bool  # whether the speech transcript is an input (CR, UANS)
    rules: str  # what is special about the task
    example: str  # one worked example: inputs -> reply

    def system_prompt(self) -> str:
        return COMMON.format(n=self.per_call) + f"\n\nTask: {self.rules}\n\nExample.\n{self.example}"


TASKS: tuple[AuraTask, ...] = (
    AuraTask(
        code="CR",
        category="causal_reasoning",
        per_call=2,
        window="short",
        layout="single",
        transcript=True,
        rules="""cross-modal causal reasoning. Find two cause-and-effect links whose cause is in one modality and
effect in the other (a spoken reason for a visible action, a visible action that makes a sound). Ask "Why
...?" or "What happens because of ...?". Give one wrong option that only the picture suggests and one that
only the sound suggests. Ignore a transcript that is noise or unrelated to the scene.""",
        example="""Visual: a woman pours batter into a hot pan; steam rises. Audio: sizzling, a woman speaking.
Transcript: "the pan must be really hot or the pancake sticks."
Reply: [{"question": "Why does the woman wait for the pan to steam before pouring?", "options": {"A": "To
cool the batter", "B": "Because a hot pan keeps the pancake from sticking", "C": "To clean the pan", "D":
"Because the recipe asks for a cold pan"}, "correct_answer_key": "B", "gold_reasoning": "She says the pan
must be very hot so the pancake does not stick, and she pours only once it steams and sizzles."}, {...}]""",
    ),
    AuraTask(
        code="UANS",
        category="unanswerability",
        per_call=2,
        window="short",
        layout="single",
        transcript=True,
        rules="""unanswerability (false premise). Ask about two details that are plausible for the scene but are
neither seen, heard nor said (the topic of a talk the speaker never names, the source of a sound that is
never shown). Three options are confident but made-up answers; the correct option states that the video does
not show or say it. The gold reasoning says which evidence is missing.""",
        example="""Visual: a cyclist rides along a coast road. Audio: wind, a man talking. Transcript: "we made
it, finally, what a day."
Reply: [{"question": "Which city is the cyclist riding towards?", "options": {"A": "Lisbon", "B": "The
video does not show or say where he is going", "C": "Barcelona", "D": "Nice"}, "correct_answer_key": "B",
"gold_reasoning": "No sign, map or spoken name tells the destination; he only says they made it."}, {...}]""",
    ),
    AuraTask(
        code="TPR",
        category="pitch_timbre_reasoning",
        per_call=3,
        window="long",
        layout="single",
        transcript=False,
        rules="""timbre / pitch reasoning. Each question compares sound sources by pitch or timbre ("higher",
"deeper", "brighter", "more resonant") and links the answer to something visible (clothing, position, the
instrument's look). A question a picture or a sound alone answers is not allowed. When the descriptions do
not compare the sources, use what is known about the instruments or voices seen. One wrong option is the
attribute of the other source.""",
        example="""Visual: a man in a grey coat plays a cello on the left, a girl in red plays a flute on the
right. Audio: a low bowed melody and a high airy one.
Reply: [{"question": "What colour does the player of the higher-pitched instrument wear?", "options": {"A":
"Grey", "B": "Red", "C": "Blue", "D": "Black"}, "correct_answer_key": "B", "gold_reasoning": "The high airy
line comes from the flute, played by the girl on the right, who wears red; grey is the cellist's coat."},
{...}, {...}]""",
    ),
    AuraTask(
        code="TSA",
        category="tempo_av_sync_analysis",
        per_call=1,
        window="long",
        layout="sync",
        transcript=False,
        rules="""tempo / audio-visual synchronisation. You are told whether the clip's sound track is aligned
with its picture or shifted. Ask about the synchronisation of a specific performer, action or instrument
from the descriptions, in your own words each time. The correct option follows the ground truth; one wrong
option states its opposite. The gold reasoning describes what is seen against what is heard, without
naming the ground truth. Reply with a list of one object.""",
        example="""Visual: a drummer in a white shirt hits the snare and the cymbals. Audio: a rock drum beat.
Ground truth: Misaligned (the sound track runs 5 s ahead of the picture).
Reply: [{"question": "Do the drum hits of the drummer in the white shirt land with the sounds heard?",
"options": {"A": "Yes, every hit matches a sound", "B": "No, the sounds do not match when his sticks land",
"C": "Only the cymbals match", "D": "The drums are silent"}, "correct_answer_key": "B", "gold_reasoning": "The
snare cracks are heard while his sticks are in the air, and his strikes fall between beats."}]""",
    ),
    AuraTask(
        code="ID",
        category="implicit_distractions",
        per_call=2,
        window="short",
        layout="stack",
        transcript=False,
        rules="""implicit distractions. Two clips are stacked into one split-screen video, one in the top half
and one in the bottom half, often with a similar subject in both. Write two questions: one about the subject
in the top half, one about the subject in the bottom half, each naming its half (or a detail that singles
it out). At least one wrong option of each question is true of the other half (a hallucination trap). The
gold reasoning names the half holding the evidence and the trap from the other half.""",
        example="""TOP visual: a guitarist with a beard by a red sofa. TOP audio: a slow acoustic strum. BOTTOM
visual: a young guitarist before a brick wall. BOTTOM audio: a fast electric riff.
Reply: [{"question": "What is next to the guitarist in the top half?", "options": {"A": "A brick wall",
"B": "A red sofa", "C": "A window", "D": "A piano"}, "correct_answer_key": "B", "gold_reasoning": "In the
top half the bearded guitarist sits by a red sofa; the brick wall is behind the bottom guitarist."}, {...}]""",
    ),
    AuraTask(
        code="PSP",
        category="performer_skill_profiling",
        per_call=2,
        window="long",
        layout="sequence",
        transcript=False,
        rules="""performer skill profiling. Two performances play one after the other: a novice's and an
expert's, in the order the ground truth gives (it is certain; a description that says otherwise is wrong).
Write two different questions, e.g. whether the first (or second) performer is the novice or the expert,
which half the expert plays in, or what the novice plays or wears. The gold reasoning points at visible and
audible signs of skill (posture, fluency, steady rhythm, clean tone) consistent with the ground truth.""",
        example="""FIRST visual: a boy at a keyboard looks at his hands. FIRST audio: a halting melody with
stops. SECOND visual: a woman plays a grand piano with closed eyes. SECOND audio: a fast, even run.
Ground truth: the novice performs first, then the expert.
Reply: [{"question": "Is the performer in the first half a novice or an expert?", "options": {"A": "An
expert", "B": "A novice", "C": "Both are equally skilled", "D": "It cannot be told"}, "correct_answer_key":
"B", "gold_reasoning": "The first player watches his hands and the melody stops and restarts, while the
second plays a fast, even run without looking."}, {...}]""",
    ),
)

BY_CODE = {t.code: t for t in TASKS}
