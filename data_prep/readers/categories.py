"""Question categories and the single-modality exclusion rule, written as data.

AVTrustBench reports results per category (paper Sec. 3): MUSIC-AVQA keeps its own question types;
AVQA questions are put into Existential / Temporal / Localization / World knowledge by a "lookup + prefix
matching" rule (paper Sec. 3 and App. A.2). The rule is data here so that it can be read, tested and
changed without touching code; docs/readers.md explains every entry.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from cavpref.data import CATEGORIES
from cavpref.data_prep.records import QARecord

# MUSIC-AVQA `type[1]` -> category (paper: "we retain the original category labels").
MUSIC_AVQA_TYPES: dict[str, str] = {
    "Counting": "Count",
    "Location": "Localization",
    "Existential": "Existential",
    "Comparative": "Comparative",
    "Temporal": "Temporal",
}
MUSIC_AVQA_MODALITIES = ("Audio", "Visual", "Audio-Visual")

# AVQA: prefix rules on the cleaned, lower-cased question text, tried in order, first match wins. They
# catch questions whose wording says more than their `question_type` (e.g. a "Which"-typed
# "Where is the ... ?" asks for a place).
AVQA_PREFIX_RULES: tuple[tuple[str, str], ...] = (
    ("why ", "World knowledge"),
    ("what is the purpose", "World knowledge"),
    ("what is the use", "World knowledge"),
    ("what can ", "World knowledge"),
    ("when ", "Temporal"),
    ("before ", "Temporal"),
    ("after ", "Temporal"),
    ("what happened before", "Temporal"),
    ("what happened after", "Temporal"),
    ("what happens before", "Temporal"),
    ("what happens after", "Temporal"),
    ("what happens next", "Temporal"),
    ("what will happen", "Temporal"),
    ("where ", "Localization"),
    ("in which place", "Localization"),
    ("in what place", "Localization"),
)

# AVQA: `question_type` -> category, used when no prefix rule matched.
AVQA_TYPE_LOOKUP: dict[str, str] = {
    "Which": "Existential",  # which object / what is making the sound: is the object there
    "Happening": "Existential",  # what happened: is this event in the clip
    "Come From": "Localization",  # where does the sound come from
    "Where": "Localization",  # where is the video taken
    "Before Next": "Temporal",
    "When": "Temporal",
    "Why": "World knowledge",  # cause needs knowledge beyond the clip
    "Used For": "World knowledge",  # function of an object
}
AVQA_RELATIONS = ("View", "Sound", "Both")

# The generic JSONL (readers/custom.py): a question without a ``category`` gets one from these prefix rules (a
# counting rule first, then AVQA's), else the reader's ``default_category``; how each was set is counted in
# the build's stats. Its ``modality`` words map onto MUSIC-AVQA's labels, which the generators already read.
CUSTOM_PREFIX_RULES: tuple[tuple[str, str], ...] = (("how many ", "Count"),) + AVQA_PREFIX_RULES
CUSTOM_MODALITIES: dict[str, str] = {"audio": "Audio", "visual": "Visual", "audio-visual": "Audio-Visual"}

# Single-modality exclusion (paper App. A.1): source -> {modality label -> reason}. MUSIC-AVQA's
# `type[0]` and AVQA's `question_relation` say which modality a question needs; anything but the
# audio-visual label is answerable from one modality alone. AudioSet segments carry no such label.
SINGLE_MODALITY: dict[str, dict[str, str]] = {
    "music_avqa": {"Audio": "audio-only question", "Visual": "visual-only question"},
    "avqa": {"Sound": "audio-only question", "View": "visual-only question"},
    "custom": {"Audio": "audio-only question", "Visual": "visual-only question"},
}


def avqa_category(
    question: str,
    qtype: str,
    prefix_rules: Iterable[tuple[str, str]] = AVQA_PREFIX_RULES,
    lookup: dict[str, str] = AVQA_TYPE_LOOKUP,
) -> str | None:
    """Prefix rules on the question first, then the `question_type` lookup; None if neither applies."""
    text = question.strip().lower()
    for prefix, category in prefix_rules:
        if text.startswith(prefix):
            return category
    return lookup.get(qtype)


def exclusion_reason(record: QARecord, rules: dict[str, dict[str, str]] = SINGLE_MODALITY) -> str | None:
    """Why ``record`` is left out of the benchmark, or None to keep it."""
    if record.source == "music_avqa" and record.meta.get("question_deleted"):
        return "music_avqa: question_deleted"
    reason = rules.get(record.source, {}).get(record.modality or "")
    return f"{record.source}: {reason}" if reason else None


def filter_single_modality(
    records: Iterable[QARecord], rules: dict[str, dict[str, str]] = SINGLE_MODALITY
) -> tuple[list[QARecord], Counter]:
    """(records to keep, excluded count per reason). Separate from reading so ``read`` can show all."""
    kept, excluded = [], Counter()
    for record in records:
        reason = exclusion_reason(record, rules)
        if reason is None:
            kept.append(record)
        else:
            excluded[reason] += 1
    return kept, excluded


assert set(MUSIC_AVQA_TYPES.values()) <= set(CATEGORIES)
assert set(AVQA_TYPE_LOOKUP.values()) | {c for _, c in CUSTOM_PREFIX_RULES} <= set(CATEGORIES)
