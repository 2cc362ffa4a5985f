"""Source dataset readers: MUSIC-AVQA (v1, v2.0), AVQA and AudioSet, read exactly as released, and the generic
AV-QA JSONL of a user's own clips (``custom``, docs/your_data.md).

One public entry, ``read_source(source, files, ...) -> ReadResult``; the single-modality exclusion is a
separate step (``filter_single_modality``) so that ``cavpref prep read`` can show every record.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from cavpref.data_prep.readers.audioset import (
    Ontology,
    label_names,
    read_class_labels,
    read_ontology,
    read_segments,
)
from cavpref.data_prep.readers.avqa import read_avqa
from cavpref.data_prep.readers.categories import exclusion_reason, filter_single_modality
from cavpref.data_prep.readers.common import ReaderConfig, ReaderError, ReadResult
from cavpref.data_prep.readers.custom import read_custom, to_custom
from cavpref.data_prep.readers.music_avqa import read_music_avqa

__all__ = [
    "READERS",
    "Ontology",
    "ReadResult",
    "ReaderConfig",
    "ReaderError",
    "exclusion_reason",
    "filter_single_modality",
    "read_avqa",
    "read_class_labels",
    "read_custom",
    "read_music_avqa",
    "read_ontology",
    "read_segments",
    "read_source",
    "to_custom",
]
# every source read_source knows, in reading order (the build's PrepConfig has one key of files per name)
READERS = ("music_avqa", "avqa", "audioset", "custom")


def read_source(
    source: str,
    files: Iterable[str | os.PathLike],
    config: ReaderConfig | None = None,
    *,
    labels: str | None = None,
    ontology: str | Ontology | None = None,
) -> ReadResult:
    """Read annotation files of one source (one of ``READERS``) into QARecords (no filtering), in file order.

    ``labels`` / ``ontology`` name the AudioSet label files (the csv is preferred for display names).
    """
    config = config or ReaderConfig()
    result = ReadResult()
    if source == "audioset":
        names = label_names(labels, ontology)
        for f in files:
            result.extend(read_segments(str(f), names, config))
        return result
    readers = {"music_avqa": read_music_avqa, "avqa": read_avqa, "custom": read_custom}
    if source not in readers:
        raise ValueError(f"unknown source {source!r} (expected one of {READERS})")
    for f in files:
        result.extend(readers[source](str(f), config))
    return result
