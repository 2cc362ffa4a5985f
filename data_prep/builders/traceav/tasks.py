"""TraceAV-Bench's fifteen sub-tasks as the builder runs them.

``task_type`` is the released name (``data/<task_type>.json``, what ``cavpref eval traceav`` reads); the
definitions are our wording of the paper's App. C. Two rules per task come from the released construction
code (``Heinz217/TraceAV-Bench-Submission``, ``src/step3_agentic_question_generation``):

* the option mode: the sub-tasks its ``TASK_TYPES_SINGLE_CHOICE_ONLY`` names must have exactly one correct
  option, the others one or more (note: the released data has a few multi-choice items in some of those
  sub-tasks, Table 7, so that set did not build every released item);
* the modality rule of the hop labels (``verify_final_trajectory_labels``), by dimension: AVR needs a hop
  with audio and one with vision (an "audio-visual" hop counts for both), VR only visual hops, AR only audio
  hops, MH no rule.
"""

from __future__ import annotations

from dataclasses import dataclass

PROMPT_VERSION = "traceav-builder-1"
LABELS = ("visual", "audio", "audio-visual")


@dataclass(frozen=True)
class TraceTask:
    task_type: str
    dimension: str  # AVR | VR | AR | MH
    single_only: bool
    definition: str

    def label_problem(self, labels: list[str]) -> str | None:
        """Why the hops' modality labels break the dimension's rule, or None."""
        labels = [str(x).strip().lower().replace("_", "-") for x in labels]
        if self.dimension == "MH":
            return None
        if not labels:
            return "no hops"
        if any(x not in LABELS for x in labels):
            return "a hop label is not visual / audio / audio-visual"
        if self.dimension == "VR" and any(x != "visual" for x in labels):
            return "a visual-only task with a non-visual hop"
        if self.dimension == "AR" and any(x != "audio" for x in labels):
            return "an audio-only task with a non-audio hop"
        if self.dimension == "AVR":
            if not any(x in ("audio", "audio-visual") for x in labels):
                return "an audio-visual task without an audio hop"
            if not any(x in ("visual", "audio-visual") for x in labels):
                return "an audio-visual task without a visual hop"
        return None


TASKS: tuple[TraceTask, ...] = (
    TraceTask(
        "av_information_retrieval",
        "AVR",
        True,
        "Retrieve one specific fact (an on-screen number, a spoken name, a written text) that can only be "
        "found by joining cues from at least two distant events, e.g. who someone is is shown early and what "
        "is said about them comes much later.",
    ),
    TraceTask(
        "av_temporal_sequencing",
        "AVR",
        False,
        "Put a few events or state changes from non-adjacent parts of the video in chronological order.",
    ),
    TraceTask(
        "av_entity_tracking",
        "AVR",
        False,
        "Follow one entity across several separate events, through changes of look (clothing, light, "
        "viewpoint) or of sound (another speaker, background noise), and ask about its changing role or state.",
    ),
    TraceTask(
        "av_forward_causal_reasoning",
        "AVR",
        True,
        "Start from an early cause and ask for its consequence much later, through intermediate events whose "
        "relevance is not obvious.",
    ),
    TraceTask(
        "av_backward_causal_reasoning",
        "AVR",
        True,
        "Start from a late, observable outcome and ask for its earlier root cause, telling the true cause from "
        "events that merely happened before it.",
    ),
    TraceTask(
        "av_cross_modality_matching",
        "AVR",
        True,
        "Pair a sound (a distinctive voice, an effect, a musical motif) with its visual source among several "
        "plausible candidates shown at different times.",
    ),
    TraceTask(
        "av_spatiotemporal_localization",
        "AVR",
        False,
        "Ask at which minute a target event happens, where the minute must be found by chaining clues from at "
        "least two different events; options are minutes.",
    ),
    TraceTask(
        "v_spatial_reasoning",
        "VR",
        True,
        "Ask about spatial relations (positions, directions, layouts) that hold across several events, from "
        "the picture alone.",
    ),
    TraceTask(
        "v_visual_counting",
        "VR",
        True,
        "Count how often something is seen, where what to count is defined by another event (e.g. how many "
        "times X happens after Y begins), from the picture alone.",
    ),
    TraceTask(
        "a_speech_context",
        "AR",
        True,
        "Reason over what is said across several events; the answer follows from the speech alone, never from "
        "what is seen.",
    ),
    TraceTask(
        "a_environmental_sound",
        "AR",
        True,
        "Reason over brief non-speech, non-music sounds (a siren, a door, machinery) threaded across distant "
        "events, from the sound alone.",
    ),
    TraceTask(
        "a_background_music",
        "AR",
        True,
        "Reason over the background music or soundscape and how its changes go with the story, from the sound "
        "alone.",
    ),
    TraceTask(
        "mh_visual_to_audio_deception",
        "MH",
        False,
        "Ground the question in real visual evidence, then ask about a sound that never occurs; the correct "
        "answer rejects the false audio premise.",
    ),
    TraceTask(
        "mh_audio_to_visual_deception",
        "MH",
        False,
        "Ground the question in real audio evidence, then ask about a visual detail that never appears; the "
        "correct answer rejects the false visual premise.",
    ),
    TraceTask(
        "mh_temporal_splicing_fallacy",
        "MH",
        False,
        "Present a made-up sequence that splices real but separate moments into one story; the correct answer "
        "points out that the order or connection is false.",
    ),
)

BY_TYPE = {t.task_type: t for t in TASKS}
