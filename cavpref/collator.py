"""Preference rows -> one concatenated model batch holding only the rows some loss term needs.

A CAVPref sample has up to six (prompt, response, media) rows (paper Eq. 1-3):

    slot   response            media                 used when
    y_w    chosen              presented (media)     always
    y_l    rejected            presented             dpo / cavpref
    v_w    visual_response     visual_clean          eta = 1    (V_w, A_w)
    v_l    visual_response     visual_perturbed      eta = 1    (V_l, A_w)
    a_w    audio_response      audio_clean           gamma = 1  (V_w, A_w)
    a_l    audio_response      audio_perturbed       gamma = 1  (V_w, A_l)

The collator builds exactly the rows the method and each sample's switches need (``rows="needed"``), or
every row the data has (``rows="all"``, for precomputing the reference once), removes duplicate rows
(e.g. v_w == a_w when both switches are on), decodes each distinct MediaSpec once per batch, and hands
the rows to the model I/O. ``slots`` maps every (slot, sample) to its row, -1 where absent, so the
trainer turns the flat (R,) log-probs back into the per-sample dict the loss takes.

Bad input is never dropped silently: missing fields, empty responses and media that fail to decode raise
``BadRowError`` naming the example and field, or — with ``skip_bad_rows`` — drop that sample and report it
in ``batch["skipped"]`` so the trainer can count it.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from cavpref import task_registry
from cavpref.models.base import AVModelIO, ModelIOError, Row
from cavpref.sampler import PreferenceBatchSampler  # noqa: F401 - re-exported (its home before the split)

SLOTS = ("y_w", "y_l", "v_w", "v_l", "a_w", "a_l")
# slot -> (response column, media column)
SLOT_FIELDS = {
    "y_w": ("chosen", "media"),
    "y_l": ("rejected", "media"),
    "v_w": ("visual_response", "visual_clean"),
    "v_l": ("visual_response", "visual_perturbed"),
    "a_w": ("audio_response", "audio_clean"),
    "a_l": ("audio_response", "audio_perturbed"),
}
SCORE_FIELDS = {"y": "clap_delta", "v": "avsm_delta_v", "a": "avsm_delta_a"}
#: the anchor rows' response (``CAVPrefConfig.anchor_response``): the anchor pair's own (the original answer)
#: or the sample's chosen response, as the paper prints Eq. 2-3 (docs/training.md, "Anchors")
ANCHORS = ("original", "chosen")
REF_COLUMNS = {k: f"ref_{k}" for k in SLOTS}


class BadRowError(ValueError):
    """A preference row that cannot be used. The message names the example id and the field."""


def slot_fields(anchor: str = "original") -> dict[str, tuple[str, str]]:
    """slot -> (response column, media column) when the anchor rows score ``anchor``: ``original`` keeps
    ``SLOT_FIELDS`` (the answer the clean media support, mDPO's conditional anchor); ``chosen`` puts the
    sample's ``chosen`` response under the anchor pair's clean and perturbed media (the paper's y_w)."""
    if anchor not in ANCHORS:
        raise ValueError(f"anchor_response must be one of {ANCHORS}, got {anchor!r}")
    if anchor == "original":
        return dict(SLOT_FIELDS)
    return {s: ("chosen" if s[0] in "va" else resp, media) for s, (resp, media) in SLOT_FIELDS.items()}


def needed_slots(method: str, eta: int, gamma: int) -> tuple[str, ...]:
    """The rows one sample needs for ``method`` given its switches. ``method="all"``: every anchor row."""
    if method == "sft":
        return ("y_w",)
    slots = ["y_w", "y_l"]
    if method == "dpo":
        return tuple(slots)
    if eta:
        slots += ["v_w", "v_l"]
    if gamma:
        slots += ["a_w", "a_l"]
    return tuple(slots)


def available_slots(example: Mapping[str, Any]) -> tuple[str, ...]:
    """Every row the example has data for (used to precompute the reference once for all row types)."""
    has_v = example.get("visual_response") is not None
    has_a = example.get("audio_response") is not None
    return needed_slots("cavpref", has_v, has_a)


def check_example(
    example: Mapping[str, Any],
    slots: Sequence[str],
    calibrated: Sequence[str] = (),
    where: str = "",
    tasks: Sequence[str] | None = None,
    fields: Mapping[str, tuple[str, str]] = SLOT_FIELDS,
) -> list[str]:
    """Problems that make ``example`` unusable for ``slots``; empty when it is fine. Cheap: no decoding.
    ``tasks``: the run's tasks (its switch table's keys); default every declared task. ``fields``: the
    columns of each slot (``slot_fields``)."""
    problems = []
    ident = f"{where}example {example.get('id', '?')!r} (task {example.get('task', '?')})"
    tasks = tuple(tasks) if tasks is not None else task_registry.task_names()
    if example.get("task") not in tasks:
        problems.append(f"{ident}: field 'task' = {example.get('task')!r} is not one of {tasks}")
    if not isinstance(example.get("prompt"), str) or not example["prompt"].strip():
        problems.append(f"{ident}: field 'prompt' is missing or empty")
    for slot in slots:
        for col in fields[slot]:
            value = example.get(col)
            if value is None or (isinstance(value, str) and not value.strip()):
                problems.append(f"{ident}: field {col!r} (row {slot}) is missing or empty")
    for w, l in ((s, s[0] + "_l") for s in slots if s.endswith("_w")):
        values = [example.get(c) for c in fields[w]]
        if l in slots and all(values) and values == [example.get(c) for c in fields[l]]:
            same = " and ".join(f"{a!r} == {b!r}" for a, b in zip(fields[w], fields[l]) if a != b)
            problems.append(f"{ident}: rows {w} and {l} are the same ({same}): no preference to learn")
    components = {s[0] for s in slots}
    for comp in calibrated:
        if comp in components:
            col = SCORE_FIELDS[comp]
            value = example.get(col)
            if value is None or not math.isfinite(float(value)):
                problems.append(
                    f"{ident}: field {col!r} is missing or non-finite but beta_{comp} is calibrated"
                )
    return sorted(set(problems), key=problems.index)


def unusable_rows_message(
    dataset_name: str, problems: list[tuple[str, str]], total: int, calibrated: Sequence[str], skipping: bool
) -> str:
    """The error for unusable rows (``problems``: (id, what) pairs, the first 10 shown) that names the fixes
    that apply: score the data or fix β when a calibrated β lacks its score, else ``skip_bad_rows`` -- which is
    no fix when it would leave no row to train on."""
    shown = "\n  ".join(p for _, p in problems[:10])
    more = f"\n  ... and {len(problems) - 10} more" if len(problems) > 10 else ""
    unscored = [c for c in calibrated if any(f"field {SCORE_FIELDS[c]!r}" in p for _, p in problems)]
    fixes = []
    sft = sum(f"field {'rejected'!r} (row y_l) is missing or empty" in p for _, p in problems)
    if sft:  # an imported SFT file (cavpref data import: no rejected side) under a preference method
        fixes.append(
            f"{sft} row(s) have no rejected answer: SFT rows (an imported SFT file) train only with "
            "`method: sft` (recipes/tiny/sft.yaml)"
        )
    if unscored:
        fixes.append(
            f"score the data (prep with `score: true`, docs/scoring.md) or fix β for {', '.join(unscored)} "
            f"({' '.join(f'--beta_{c} 0.1' for c in unscored)})"
        )
    if skipping:
        head = (
            f"skip_bad_rows left no usable row: all {total} rows of the {dataset_name} dataset are unusable"
        )
    else:
        head = f"{len(problems)} unusable rows of {total} in the {dataset_name} dataset"
        fixes.append("set skip_bad_rows to skip and count them" if len(problems) < total else "")
    fixes = [f for f in fixes if f]
    return f"{head}{' (' + '; or '.join(fixes) + ')' if fixes else ''}:\n  {shown}{more}"


def check_dataset(dataset, collator: Any, name: str) -> tuple[list[int], list[tuple[str, str]]]:
    """(rows to keep, (example id, problems) of the others) of a ``datasets.Dataset``, checked as ``collator`` (a
    ``CAVPrefCollator``: its method and switch table say which fields each row needs) will use them. Cheap: the
    check columns only, no decoding."""
    collator = collator if isinstance(collator, CAVPrefCollator) else None
    calibrated = collator.calibrated if collator is not None else ()
    tasks = tuple(collator.switches) if collator is not None else None
    fields = collator.fields if collator is not None else SLOT_FIELDS
    columns = [c for c in dataset.column_names if c in _CHECK_COLUMNS]
    table = dataset.select_columns(columns).to_dict()
    keep, problems = [], []
    for i in range(len(dataset)):
        ex = {c: table[c][i] for c in columns}
        slots = collator.slots_for(ex) if collator is not None else ("y_w", "y_l")
        found = check_example(ex, slots, calibrated, where=f"{name} row {i}: ", tasks=tasks, fields=fields)
        if found:
            problems.append((str(ex.get("id", i)), "; ".join(found)))
        else:
            keep.append(i)
    return keep, problems


@dataclass
class CAVPrefCollator:
    """Collate preference examples (HF dataset rows, ``PreferenceExample.to_row`` columns) for the model_io.

    ``switches``: task -> (eta, gamma). ``method``: sft | dpo | cavpref_norobust | cavpref, or ``"all"``
    for reference precomputation. ``calibrated``: components whose β comes from scores (their score column
    must be present). ``decode``: ``(spec_json) -> DecodedMedia``; defaults to ``cavpref.media.decode``
    with ``media_root`` / ``frames`` / ``sample_rate``.
    """

    model_io: AVModelIO
    switches: Mapping[str, tuple[int, int]]
    method: str = "cavpref"
    calibrated: Sequence[str] = ()
    media_root: str = "."
    frames: Any = None
    sample_rate: int = 16000
    skip_bad_rows: bool = False
    decode: Callable[[str], Any] | None = None
    cache_size: int = 0  # decoded media kept (LRU), keyed by the MediaSpec JSON; 0 = no cache
    missing_stream: str = "allow"  # a stream the spec keeps but the file lacks: allow (counted) | error
    anchor: str = "original"  # the anchor rows' response: original | chosen (``slot_fields``)

    def __post_init__(self):
        self.fields = slot_fields(self.anchor)
        if self.cache_size > 0:  # per process: each dataloader worker keeps its own
            self._decode = functools.lru_cache(maxsize=self.cache_size)(self._decode)

    @property
    def task_index(self) -> dict[str, int]:
        """task -> its ``task_ids`` value: the position in the run's switch table."""
        return {t: i for i, t in enumerate(self.switches)}

    def slots_for(self, example: Mapping[str, Any]) -> tuple[str, ...]:
        if self.method == "all":
            return available_slots(example)
        task = example.get("task")
        eta, gamma = self.switches.get(task, (0, 0))
        if (eta or gamma) and task_registry.task_info(task).dimension == task_registry.REFERENCE:
            # CLEAN perturbs nothing: its anchors are borrowed from a perturbed twin (prep's clean_anchors), so a
            # switch on means "where the row carries that anchor"
            eta = eta and example.get("visual_response") is not None
            gamma = gamma and example.get("audio_response") is not None
        return needed_slots(self.method, eta, gamma)

    def _decode(self, spec_json: str):
        if self.decode is not None:
            return self.decode(spec_json)
        from cavpref.media.decode import FramePolicy, decode

        return decode(
            spec_json, self.media_root, frames=self.frames or FramePolicy(), sample_rate=self.sample_rate
        )

    def __call__(self, examples: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        skipped: list[tuple[str, str]] = []
        kept: list[tuple[Mapping[str, Any], tuple[str, ...]]] = []
        media: dict[str, Any] = {}
        missing: list[tuple[str, str, str]] = []  # (example id, task, stream) trained without that stream
        for ex in examples:
            slots = self.slots_for(ex)
            problems = check_example(
                ex, slots, self.calibrated, tasks=tuple(self.switches), fields=self.fields
            )
            if not problems:
                problems = self._decode_all(ex, slots, media)
            if not problems:
                problems = self._missing_streams(ex, slots, media, missing)
            if problems:
                if not self.skip_bad_rows:
                    raise BadRowError("; ".join(problems))
                skipped.append((str(ex.get("id", "?")), "; ".join(problems)))
                continue
            kept.append((ex, slots))
        batch = self._build(kept, media)
        if batch is None:  # an ModelIOError: find the offending examples one by one
            kept, extra = self._isolate_model_io_errors(kept, media)
            skipped += extra
            batch = self._build(kept, media)
        if not kept:
            if not self.skip_bad_rows:
                raise BadRowError(f"every example of this batch is unusable: {skipped}")
            # skip_bad_rows: the trainer skips (and counts) the whole batch; the rows go to skipped_rows.json
            return {"empty": True, "skipped": skipped}
        batch["skipped"] = skipped
        kept_ids = {str(ex.get("id", "?")) for ex, _ in kept}
        batch["missing_streams"] = [m for m in missing if m[0] in kept_ids]
        return batch

    def _missing_streams(self, ex, slots, media, missing) -> list[str]:
        """Streams a slot's spec keeps but its file lacks: noted in ``missing`` (counted by the trainer), or
        a problem of the row under ``missing_stream: error``."""
        from cavpref.media.missing import describe_missing, missing_streams

        if self.decode is not None:  # a custom decoder's keys are not MediaSpecs: no spec to compare against
            return []
        problems, found = [], set()
        for slot in slots:
            col = SLOT_FIELDS[slot][1]
            lack = missing_streams(ex[col], media[ex[col]])
            if lack and self.missing_stream == "error":
                problems.append(
                    f"example {ex.get('id', '?')!r} (task {ex.get('task')}): field {col!r} (row {slot}): "
                    f"{describe_missing(ex[col], lack)} (missing_stream: error)"
                )
            found.update(lack)
        if not problems:
            missing += [(str(ex.get("id", "?")), str(ex.get("task")), s) for s in sorted(found)]
        return sorted(set(problems), key=problems.index)

    def _decode_all(self, ex, slots, media) -> list[str]:
        problems = []
        for slot in slots:
            col = SLOT_FIELDS[slot][1]
            spec = ex[col]
            if spec in media:
                continue
            try:
                media[spec] = self._decode(spec)
            except Exception as err:  # noqa: BLE001 - any decoder failure is reported with its row and field
                problems.append(
                    f"example {ex.get('id', '?')!r} (task {ex.get('task')}): field {col!r} "
                    f"(row {slot}) failed to decode: {type(err).__name__}: {err}"
                )
        return problems

    def _rows(self, kept, media):
        rows, index = [], {}
        slot_idx = {s: [-1] * len(kept) for s in SLOTS}
        for i, (ex, slots) in enumerate(kept):
            for slot in slots:
                resp_col, media_col = self.fields[slot]
                flag = ex.get("use_audio_in_video")  # the row's own; None: the model I/O's (the recipe's)
                key = (ex["prompt"], ex[resp_col], ex[media_col], flag)
                if key not in index:
                    index[key] = len(rows)
                    rows.append(
                        Row(
                            prompt=ex["prompt"],
                            response=ex[resp_col],
                            media=media[ex[media_col]],
                            media_key=ex[media_col],
                            row_id=f"{ex.get('id', i)}/{slot}:{resp_col}",
                            use_audio_in_video=flag,
                        )
                    )
                slot_idx[slot][i] = index[key]
        return rows, slot_idx

    def _build(self, kept, media) -> dict[str, Any] | None:
        if not kept:
            return {}
        rows, slot_idx = self._rows(kept, media)
        try:
            model_inputs = self.model_io.collate(rows)
        except ModelIOError as err:
            if not self.skip_bad_rows:
                raise BadRowError(f"model_io rejected a row: {err}") from err
            return None
        batch: dict[str, Any] = {
            "model_inputs": model_inputs,
            "slots": {s: torch.tensor(v, dtype=torch.long) for s, v in slot_idx.items()},
            "eta": torch.tensor([int("v_w" in s) for _, s in kept], dtype=torch.long),
            "gamma": torch.tensor([int("a_w" in s) for _, s in kept], dtype=torch.long),
            # index into the run's task table (the switches' keys): the metrics read the names back from it
            "task_ids": torch.tensor([self.task_index[ex["task"]] for ex, _ in kept], dtype=torch.long),
            "scores": {
                c: torch.tensor([_float(ex.get(col)) for ex, _ in kept], dtype=torch.float32)
                for c, col in SCORE_FIELDS.items()
            },
            "num_rows": torch.tensor(len(rows), dtype=torch.long),
            "example_ids": [str(ex.get("id", "")) for ex, _ in kept],
        }
        if all(REF_COLUMNS["y_w"] in ex for ex, _ in kept):
            batch["ref"] = {
                s: torch.tensor([_float(ex.get(c)) for ex, _ in kept], dtype=torch.float32)
                for s, c in REF_COLUMNS.items()
            }
        return batch

    def _isolate_model_io_errors(self, kept, media):
        good, bad = [], []
        for ex, slots in kept:
            rows, _ = self._rows([(ex, slots)], media)
            try:
                self.model_io.collate(rows)
                good.append((ex, slots))
            except ModelIOError as err:
                bad.append((str(ex.get("id", "?")), f"model_io rejected a row: {err}"))
        return good, bad


def _float(value) -> float:
    return float("nan") if value is None else float(value)


# Columns the field check reads (anything else in the dataset is passed through untouched).
_CHECK_COLUMNS = {"id", "task", "prompt", *SCORE_FIELDS.values()} | {
    c for fields in SLOT_FIELDS.values() for c in fields
}
