"""Conditional media both ways: ms-swift's ``rejected_videos`` / ``rejected_audios`` <-> CAVPref's anchor pairs.

ms-swift's preference rows may give the rejected side other media instead of (or besides) another answer: its
DPO example ``{"messages": [.., {"role": "assistant", "content": "a kitten"}], "images": ["cat.png"],
"rejected_images": ["dog.png"]}`` prefers *the same response* under the chosen media to it under the rejected
media (mDPO's conditional preference). That is exactly a CAVPref anchor pair — ``(y | V_w, A_w)`` over
``(y | V_l, A_w)`` for the visual term (Eq. 2), ``(y | V_w, A_l)`` for the audio term (Eq. 3) — so:

- **import**: a row whose ``rejected_videos`` differ from its ``videos`` gives its row a visual anchor (the
  response under the row's media vs under the rejected files), ``rejected_audios`` an audio anchor; both
  different is an error (an anchor changes one stream). A row that also has a ``rejected_response`` is one
  cavpref row (the y pair and the anchor); a row without one has no y pair of its own and is attached to the
  preference row with the same prompt, answer and media (or, written by cavpref, to the row its
  ``cavpref_anchor_of`` names). A row with anchors gets the task of its anchors: ``CLEAN-V`` (η, γ = 1, 0),
  ``CLEAN-A`` (0, 1) or ``CLEAN-VA`` (1, 1) — clean questions whose V / A terms are on — declared here and
  written to the import's task table, so training switches the terms on without a recipe ``switch_table``.
- **export** (``--format swift``): each anchor of a cavpref row is written as such a row after it (the anchor's
  response under its clean media, ``rejected_videos`` / ``rejected_audios`` the perturbed media's files), with
  ``cavpref_anchor_of`` / ``cavpref_anchor`` and the exact MediaSpecs (``cavpref_anchor_clean`` /
  ``_perturbed``) beside it; the row itself lists them in ``cavpref_anchor_rows`` instead of carrying the
  anchor columns. ms-swift trains the conditional rows as they are; an import puts them back (round trip equal).

The rejected side's files are read as ms-swift lists them: a list it does not give is the chosen side's; an
explicitly empty ``rejected_audios`` is the sound removed (a muted video), whatever ``use_audio_in_video``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cavpref import task_registry
from cavpref.data import AnchorPair, PreferenceExample
from cavpref.data_prep.formats.common import EXTRA_PREFIX, Fail, Turn, files_spec
from cavpref.media.spec import from_json, to_json

TASKS = {"CLEAN-V": (1, 0), "CLEAN-A": (0, 1), "CLEAN-VA": (1, 1)}  # η (visual term), γ (audio term)
ANCHORS = ("visual", "audio")
ANCHOR_COLUMNS = tuple(f"{EXTRA_PREFIX}{a}_{k}" for a in ANCHORS for k in ("response", "clean", "perturbed"))
OF, KIND, CLEAN, PERTURBED = (
    EXTRA_PREFIX + k for k in ("anchor_of", "anchor", "anchor_clean", "anchor_perturbed")
)
IN_ROWS = EXTRA_PREFIX + "anchor_rows"  # on a row: which of its anchors follow it as conditional rows


def declare() -> None:
    """The conditional tasks (idempotent): clean questions, not abstentions, the Reference dimension (no
    benchmark task), their anchors' switches on."""
    for name, switches in TASKS.items():
        task_registry.declare_task(task_registry.TaskInfo(name, task_registry.REFERENCE, False, switches))


def task_for(example: PreferenceExample) -> str:
    v, a = example.visual is not None, example.audio is not None
    return "CLEAN-VA" if v and a else "CLEAN-V" if v else "CLEAN-A"


def is_conditional(turn: Turn) -> bool:
    return turn.rejected_videos is not None or turn.rejected_audios is not None or OF in turn.extras


def exact(turn: Turn) -> bool:
    """Whether the row's MediaSpecs are in its cavpref_* columns (its file lists then need not resolve)."""
    return bool(turn.extras) and (OF not in turn.extras or CLEAN in turn.extras)


@dataclass
class Anchor:
    """One conditional row read: its anchor pair and where it belongs."""

    kind: str  # visual | audio
    pair: AnchorPair
    of: str | None  # the cavpref row id it follows (written by cavpref), else None
    key: tuple[str, str, str]  # (prompt, response, clean media): the preference row it belongs to
    fail: Fail
    has_pair: bool  # the row also has a rejected response: it is a cavpref row of its own


def read(turn: Turn, paths: dict[str, list[str]], use_audio_in_video: bool, fail: Fail) -> Anchor:
    """The anchor of a conditional row. ``paths``: ``videos`` / ``audios`` / ``rejected_videos`` /
    ``rejected_audios`` relative to the data root (a list the row does not give: None)."""
    extras = turn.extras
    of = None if extras.get(OF) is None else str(extras[OF])
    kind = extras.get(KIND)
    if of is not None and kind not in ANCHORS:
        raise fail(KIND, f"expected one of {ANCHORS}", repr(kind)[:80])
    if of is not None and CLEAN in extras:  # written by cavpref: its exact MediaSpecs
        try:
            clean, perturbed = to_json(from_json(extras[CLEAN])), to_json(from_json(extras[PERTURBED]))
        except (KeyError, TypeError, ValueError) as err:
            raise fail(CLEAN, "not a MediaSpec", str(err)[:80]) from None
        return Anchor(kind, AnchorPair(turn.chosen, clean, perturbed), of, ("", "", ""), fail, False)
    rv, ra = paths["rejected_videos"], paths["rejected_audios"]
    if rv is not None and ra is not None and kind is None:
        raise fail(
            "rejected_audios",
            "both streams differ from the chosen side's",
            "an anchor pair changes one stream: the video (visual anchor) or the sound (audio anchor)",
        )
    flag = turn.use_audio_in_video if turn.use_audio_in_video is not None else use_audio_in_video
    clean = files_spec(paths["videos"], paths["audios"], flag, fail)
    perturbed = files_spec(
        rv if rv is not None else paths["videos"],
        ra if ra is not None else paths["audios"],
        flag if ra is None else False,  # an emptied rejected_audios removes the sound
        fail,
    )
    kind = kind or ("visual" if rv is not None else "audio")
    pair = AnchorPair(turn.chosen, to_json(clean), to_json(perturbed))
    return Anchor(kind, pair, of, (turn.prompt, turn.chosen, pair.clean), fail, turn.rejected is not None)


class Attacher:
    """Puts each conditional row's anchor on its preference row (in place): the row its ``cavpref_anchor_of``
    names, else the row with the same prompt, chosen answer and media. A row given the same anchor twice, or
    an anchor with no row, is an error naming the conditional row. Rows that gain anchors and were not
    written by cavpref get ``conditional_task`` or the task of their anchors."""

    def __init__(self, rows: list[PreferenceExample], conditional_task: str | None):
        self.by_id = {r.id: r for r in rows}
        self.by_key: dict[tuple[str, str, str], PreferenceExample] = {}
        for r in rows:
            self.by_key.setdefault((r.prompt, r.chosen, r.media), r)
        self.task = conditional_task

    def add(self, a: Anchor) -> None:
        row = self.by_id.get(a.of) if a.of is not None else self.by_key.get(a.key)
        if row is None:
            where = (
                f"row {a.of!r}" if a.of is not None else "preference row of the same prompt, answer and media"
            )
            raise a.fail(
                OF if a.of is not None else "rejected_response",
                "a conditional row (the same response under other media) with no pair",
                f"found no {where} to attach it to; give it a rejected_response",
            )
        put(row, a, self.task)


def put(row: PreferenceExample, a: Anchor, conditional_task: str | None) -> None:
    """``a``'s anchor on ``row``; a row not written by cavpref then takes the task of its anchors."""
    if getattr(row, a.kind) is not None:
        stream = "videos" if a.kind == "visual" else "audios"
        raise a.fail(KIND if a.of else "rejected_" + stream, f"row {row.id} already has a {a.kind} anchor")
    setattr(row, a.kind, a.pair)
    if a.of is None:
        row.task = conditional_task or task_for(row)


def export_rows(example: PreferenceExample, files_of) -> tuple[list[str], list[Turn]]:
    """(the anchors written as rows, one conditional Turn per anchor) of a cavpref row. ``files_of(spec)``:
    (videos, audios) as the export writes them (whole files or materialized)."""
    kinds, turns = [], []
    for kind in ANCHORS:
        pair = getattr(example, kind)
        if pair is None:
            continue
        (cv, ca), (pv, pa) = files_of(pair.clean), files_of(pair.perturbed)
        extras = {OF: example.id, KIND: kind, CLEAN: pair.clean, PERTURBED: pair.perturbed}
        turn = Turn(example.prompt, pair.response, None, cv, ca, extras)
        if kind == "visual" or pv != cv:
            turn.rejected_videos = pv
        if kind == "audio" or pa != ca:
            turn.rejected_audios = pa
        kinds.append(kind)
        turns.append(turn)
    return kinds, turns


def main_row_extras(extras: dict[str, Any], kinds: list[str]) -> dict[str, Any]:
    """A row's cavpref_* columns when its anchors follow it as rows: those anchors' columns left out, listed."""
    if not kinds:
        return extras
    gone = {f"{EXTRA_PREFIX}{k}_{part}" for k in kinds for part in ("response", "clean", "perturbed")}
    return {**{k: v for k, v in extras.items() if k not in gone}, IN_ROWS: kinds}


def check_attached(rows: list[PreferenceExample], expected: dict[str, tuple[list[str], Fail]]) -> None:
    """Every anchor a cavpref row listed in ``cavpref_anchor_rows`` came back from its conditional row."""
    by_id = {r.id: r for r in rows}
    for rid, (kinds, fail) in expected.items():
        for kind in kinds:
            if getattr(by_id[rid], kind) is None:
                raise fail(
                    IN_ROWS, f"its {kind} anchor row is missing", "it follows the row in the exported file"
                )
