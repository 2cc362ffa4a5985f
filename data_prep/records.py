"""QARecord: one source question (or one AudioSet segment) as a reader makes it, before any perturbation.

Readers (``data_prep/readers``) produce these from the released files; the nine task generators
(``data_prep/tasks``) consume them. Keeping the record flat and source-agnostic is what lets the synthetic
world and the real datasets share every later stage.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

SOURCES = ("music_avqa", "avqa", "audioset", "custom", "custom_clips")
# What a record of each source is to the generators: a question about a clip (the QA tasks), or a labelled clip
# whose single sound event the compositional tasks (COT-Stitch, COT-Swap, CAT) put in order or bind.
# ``custom`` / ``custom_clips`` are the question lines / the labelled-clip lines of the generic JSONL
# (``data_prep/readers/custom.py``, docs/your_data.md).
QA_SOURCES = ("avqa", "music_avqa", "custom")
EVENT_SOURCES = ("audioset", "custom_clips")


@dataclass
class QARecord:
    source: str  # one of SOURCES
    source_id: str  # video_id (MUSIC-AVQA) / video_name (AVQA) / YTID (AudioSet) as released; custom: its id
    file: str  # the annotation file the record came from (for error messages and provenance)
    index: int  # position in that file (question_id is not unique in MUSIC-AVQA: never key on it)
    media: str  # canonical MediaSpec JSON of the clip, path relative to the data root
    question: str = ""  # templates filled, normalised ("？" -> "?", stripped); "" for AudioSet segments
    answer: str = ""  # answer text ("" for AudioSet segments)
    options: list[str] | None = None  # the source's own options (AVQA multi_choice), else None
    category: str = ""  # one of cavpref.data.CATEGORIES ("" for AudioSet segments)
    modality: str | None = None  # MUSIC-AVQA "Audio"/"Visual"/"Audio-Visual"; AVQA question_relation
    qtype: str | None = None  # raw source type: MUSIC-AVQA "Counting", AVQA "Which", ...
    start: float | None = None  # AudioSet segment start (s)
    end: float | None = None  # AudioSet segment end (s)
    labels: list[str] = field(default_factory=list)  # AudioSet display names
    label_ids: list[str] = field(default_factory=list)  # AudioSet mids
    meta: dict[str, Any] = field(default_factory=dict)  # source-specific extras (question_id, v2 fields, ...)

    @property
    def key(self) -> str:
        """Unique within a source: file stem + record index."""
        return f"{self.source}:{self.file.rsplit('/', 1)[-1]}:{self.index}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
