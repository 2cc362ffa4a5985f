"""Write annotations byte-for-byte in the released on-disk formats (see /work/shared/SOURCE_FORMATS.md).

The readers treat these files exactly like the released datasets, so every quirk a reader must survive
is reproduced on purpose: MUSIC-AVQA's JSON-in-a-string ``type``/``templ_values``, the ``anser`` key,
repeated ``question_id``s, full-width "？" and trailing spaces; AudioSet's three comment lines, ", "
separators and quoted label lists.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from .catalogue import ONTOLOGY

MUSIC_KEYS = (
    "video_id",
    "question_id",
    "type",
    "question_content",
    "templ_values",
    "question_deleted",
    "anser",
)
AVQA_KEYS = (
    "id",
    "video_name",
    "video_id",
    "question_text",
    "multi_choice",
    "answer",
    "question_relation",
    "question_type",
)


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)


def json_array(records: Iterable[dict[str, Any]]) -> str:
    """One record per line inside a JSON array (UTF-8, "？" kept as is)."""
    lines = [json.dumps(r, ensure_ascii=False) for r in records]
    return "[\n" + ",\n".join(lines) + "\n]\n" if lines else "[]\n"


def music_record(
    video_id: str, question_id: int, modality: str, qtype: str, content: str, values: list[str], answer: str
) -> dict[str, Any]:
    rec = {
        "video_id": video_id,
        "question_id": question_id,
        "type": json.dumps([modality, qtype]),
        "question_content": content,
        "templ_values": json.dumps(values),
        "question_deleted": 0,
        "anser": answer,
    }
    assert tuple(rec) == MUSIC_KEYS
    return rec


def write_music_avqa(root: str, splits: dict[str, list[dict[str, Any]]]) -> None:
    for split, records in splits.items():
        _write(os.path.join(root, "json", f"avqa-{split}.json"), json_array(records))


def write_avqa(root: str, splits: dict[str, list[dict[str, Any]]], video_map: dict[str, int]) -> None:
    for split, records in splits.items():
        for r in records:
            if tuple(r) != AVQA_KEYS or len(r["multi_choice"]) != 4 or not 0 <= r["answer"] < 4:
                raise ValueError(f"AVQA record {r.get('id')} breaks the released schema: {r}")
        _write(os.path.join(root, "annotation", f"{split}_qa.json"), json_array(records))
    _write(os.path.join(root, "video", "video_map.json"), json.dumps(video_map, indent=1) + "\n")


def segments_csv(rows: list[tuple[str, float, float, list[str]]], seed: int) -> str:
    labels = {m for *_, mids in rows for m in mids}
    head = [
        f"# Segments csv created by the cavpref synthetic world (seed {seed})",
        (
            f"# num_ytids={len({r[0] for r in rows})}, num_segs={len(rows)}, "
            f"num_unique_labels={len(labels)}, num_positive_labels={sum(len(r[3]) for r in rows)}"
        ),
        "# YTID, start_seconds, end_seconds, positive_labels",
    ]
    body = [f'{ytid}, {start:.3f}, {end:.3f}, "{",".join(mids)}"' for ytid, start, end, mids in rows]
    return "\n".join(head + body) + "\n"


def class_labels_csv() -> str:
    """``index,mid,display_name`` for every node without restrictions (the released 527-row file holds
    exactly the non-abstract, non-blacklisted classes); names always quoted, as released."""
    rows = [row for row in ONTOLOGY if not row[3]]
    return "index,mid,display_name\n" + "".join(
        f'{i},{mid},"{name}"\n' for i, (mid, name, *_) in enumerate(rows)
    )


def ontology_json(descriptions: dict[str, str], positives: dict[str, list[str]]) -> str:
    nodes = [
        {
            "id": mid,
            "name": name,
            "description": descriptions.get(mid, f"{name} (synthetic world node)."),
            "citation_uri": "",
            "positive_examples": positives.get(mid, []),
            "child_ids": list(children),
            "restrictions": list(restrictions),
        }
        for mid, name, children, restrictions in ONTOLOGY
    ]
    return json.dumps(nodes, indent=1) + "\n"


def write_audioset(
    root: str,
    splits: dict[str, list[tuple[str, float, float, list[str]]]],
    seed: int,
    descriptions: dict[str, str],
    positives: dict[str, list[str]],
) -> None:
    for split, rows in splits.items():
        _write(os.path.join(root, f"{split}_segments.csv"), segments_csv(rows, seed))
    _write(os.path.join(root, "class_labels_indices.csv"), class_labels_csv())
    _write(os.path.join(root, "ontology.json"), ontology_json(descriptions, positives))
