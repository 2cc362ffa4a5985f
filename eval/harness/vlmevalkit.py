"""A VLMEvalKit MCQ TSV of a cavpref benchmark, and VLMEvalKit's prediction files read back.

The layout is VLMEvalKit's image-MCQ one (``vlmeval/dataset/image_mcq.py``): ``index``, ``question``,
``hint``, one column per option letter ``A``, ``B``, …, ``answer``, ``category``, ``l2-category``,
``split``. CircularEval follows its MMBench convention (``utils/multiple_choice.py``,
``mcq_circular_eval``): every rotation is its own row, rotation ``k`` of item ``g`` has ``index = g + k ×
1,000,000`` and ``g_index = g``, rotation 0 is the row whose ``index`` equals its ``g_index``, and a dataset
whose name holds ``circular`` is evaluated circularly. The media are in ``video_path`` / ``audio_path``
(absolute paths; WorldSense's audio-visual layout: the video, and its sound as a WAV of its own, sent as a
``video`` and an ``audio`` message), the exact cavpref prompt of the pass in ``prompt``, and the
pass in ``id`` / ``rotation`` — VLMEvalKit copies every column but the image into its prediction file
(``<model>_<dataset>.xlsx``, a ``prediction`` column added), which is how ``read_predictions`` maps each
prediction back to its pass. An item whose right answer is an abstention with no option to pick (the base
setting of the abstention tasks) has an empty ``answer``: VLMEvalKit's own scoring cannot credit it;
``cavpref eval score --harness vlmevalkit`` does.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from cavpref.eval.common import BenchmarkInputError
from cavpref.eval.harness.passes import Pass

#: VLMEvalKit's offset between rotations of one question (``g_index = index % 1e6``)
CIRCULAR_OFFSET = 1_000_000


def rows(passes: list[Pass]) -> tuple[list[str], list[dict]]:
    """(columns, one row per pass) in VLMEvalKit's circular MCQ layout."""
    group: dict[str, int] = {}
    letters: list[str] = []
    out = []
    for p in passes:
        g = group.setdefault(p.item.id, len(group))
        for x in p.options:
            if x not in letters:
                letters.append(x)
        out.append(
            {
                "index": g + p.k * CIRCULAR_OFFSET,
                "g_index": g,
                "question": p.item.question,
                "hint": (p.item.instruction or "").replace("{abstain_letter}", p.abstain_letter or ""),
                **p.options,
                "answer": p.answer or "",
                "category": p.item.task,
                "l2-category": p.item.setting,
                "split": "test",
                "video_path": p.video,
                "audio_path": p.audio,
                "prompt": p.prompt,
                "id": p.item.id,
                "rotation": p.k,
                "setting": p.item.setting,
                "record": str((p.item.meta or {}).get("record") or ""),
                "abstain_letter": p.abstain_letter or "",
            }
        )
    head = ["index", "g_index", "question", "hint", *sorted(letters), "answer", "category", "l2-category"]
    tail = [
        "split",
        "video_path",
        "audio_path",
        "prompt",
        "id",
        "rotation",
        "setting",
        "record",
        "abstain_letter",
    ]
    return head + tail, out


def write_tsv(path: Path, passes: list[Pass]) -> Path:
    columns, table = rows(passes)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, columns, delimiter="\t", restval="", lineterminator="\n")
        writer.writeheader()
        writer.writerows(table)
    return path


#: the dataset class module the export writes beside the TSV (``eval/harness/vlmeval_dataset.py``)
MODULE = "cavpref_vlmeval.py"


def write_export(out: Path, name: str, passes: list[Pass], config: dict) -> list[str]:
    """The TSV, the items (the scoring of ``evaluate`` needs no data at hand), export.json and the dataset
    class module that sends the media (VLMEvalKit's loader would read the TSV as text-only)."""
    from importlib.resources import files

    tsv = write_tsv(out / f"{name}.tsv", passes)
    (out / "items.jsonl").write_text(
        "".join(json.dumps(p.item.to_row(), ensure_ascii=False) + "\n" for p in passes if p.k == 0),
        encoding="utf-8",
    )
    config = {**config, **describe(tsv, passes), "task": name, "dataset_class": "CavprefAVDataset"}
    (out / "export.json").write_text(json.dumps(config, indent=1) + "\n")
    (out / MODULE).write_text(files("cavpref.eval.harness").joinpath("vlmeval_dataset.py").read_text())
    return [tsv.name, "items.jsonl", "export.json", MODULE]


def evaluate(folder: str | Path, eval_file: str | Path) -> dict:
    """What the exported dataset class's ``evaluate`` returns: the benchmark's headline numbers of a
    VLMEvalKit prediction file, scored as ``cavpref eval score --harness vlmevalkit`` scores it."""
    from cavpref.eval.harness.lmms_eval import TaskFolder

    return TaskFolder(folder).headline(read_predictions(eval_file))


def _table(path: Path) -> list[dict]:
    """The prediction file's rows: VLMEvalKit writes ``.xlsx`` (read with openpyxl, the ``vlmevalkit``
    extra), ``.tsv`` or ``.csv`` on request."""
    if path.suffix.lower() == ".xlsx":
        try:
            import openpyxl
        except ImportError:
            raise BenchmarkInputError(
                path, "file", None, "reading .xlsx needs openpyxl (pip install 'cavpref[vlmevalkit]')"
            ) from None
        sheet = openpyxl.load_workbook(path, read_only=True, data_only=True).worksheets[0]
        values = sheet.iter_rows(values_only=True)
        head = [str(h) if h is not None else "" for h in next(values, [])]
        return [dict(zip(head, r)) for r in values if any(v is not None for v in r)]
    if path.suffix.lower() not in (".tsv", ".csv"):
        raise BenchmarkInputError(
            path, "file", None, "expected a VLMEvalKit prediction file (.xlsx, .tsv, .csv)"
        )
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t" if path.suffix.lower() == ".tsv" else ","))


def read_predictions(path: str | Path) -> list[tuple[str, dict]]:
    """VLMEvalKit's prediction file -> cavpref predictions rows ``(where, {id, rotation, response})``; a
    missing cell is an error naming the file, the row and the column."""
    path = Path(path)
    if not path.is_file():
        raise BenchmarkInputError(path, "file", None, "not found")
    out = []
    for n, row in enumerate(_table(path), 2):  # row 1 is the header, as a spreadsheet numbers them
        where = f"row {n}"
        for col in ("id", "rotation", "prediction"):
            if col not in row:
                raise BenchmarkInputError(
                    path,
                    where,
                    col,
                    "missing (not a prediction file of a TSV from `cavpref eval export "
                    "--harness vlmevalkit`)",
                )
        try:
            k = int(float(row["rotation"]))
        except (TypeError, ValueError):
            raise BenchmarkInputError(
                path, where, "rotation", f"not an integer: {row['rotation']!r:.40}"
            ) from None
        pred = row["prediction"]
        out.append(
            (where, {"id": str(row["id"]), "rotation": k, "response": "" if pred is None else str(pred)})
        )
    return out


def describe(path: Path, passes: list[Pass]) -> dict:
    return {
        "tsv": path.name,
        "rows": len(passes),
        "circular_offset": CIRCULAR_OFFSET,
        "dataset_name": path.stem,
    }


__all__ = [
    "CIRCULAR_OFFSET",
    "MODULE",
    "describe",
    "evaluate",
    "read_predictions",
    "rows",
    "write_export",
    "write_tsv",
]
