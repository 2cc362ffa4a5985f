"""Training rows under CircularEval rotations (``PrepConfig.rotate_options``, on by default).

The evaluator rotates the options (and "None of the above") on every pass. A model trained only on the
drawn letters sees "None of the above" always last and the answers at their drawn letters: it learns
letter priors and fails the rotations (the quickstart measured CLEAN CircularEval 0 % even by option
likelihood, 78.8 % vanilla; with rotated rows 70.6 % circular / 78.1 % vanilla on all 146 CLEAN test
items). So prep shows

* every preference row under ONE rotation drawn from ``(seed, id)`` (:func:`rotate_preferences`), its
  chosen / rejected / anchor responses moved with their options to the new letters; and
* SFT rows under EVERY rotation of an item (:func:`circular_sft_rows`).

The prompt of a rotated row is rendered by ``cavpref.prompts.rotated_view``, the function the evaluator
renders its passes with, so it equals the evaluation prompt of the same item and rotation byte for byte.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from cavpref.data import NONE_OF_THE_ABOVE, BenchmarkItem, PreferenceExample
from cavpref.prompts import n_passes, rotate_response, rotated_view, rotation_for


def rotate_preference(pref: PreferenceExample, item: BenchmarkItem, k: int) -> PreferenceExample:
    """``pref`` shown under rotation ``k`` of its item: prompt re-rendered, responses moved."""
    _, new_of, prompt = rotated_view(item, k)
    anchors = {
        name: None
        if pair is None
        else dataclasses.replace(pair, response=rotate_response(pair.response, new_of))
        for name, pair in (("visual", pref.visual), ("audio", pref.audio))
    }
    return dataclasses.replace(
        pref,
        prompt=prompt,
        chosen=rotate_response(pref.chosen, new_of),
        rejected=rotate_response(pref.rejected, new_of),
        **anchors,
    )


def rotate_preferences(
    prefs: Sequence[PreferenceExample], items: Iterable[BenchmarkItem], seed: int
) -> list[PreferenceExample]:
    """Every preference row under the rotation ``cavpref.prompts.rotation_for(seed, id)`` of the benchmark
    item of the same id. A row without its item is an error naming the row (the two are written together,
    so it means mixed outputs)."""
    by_id = {it.id: it for it in items}
    out = []
    for p in prefs:
        item = by_id.get(p.id)
        if item is None:
            raise ValueError(
                f"rotate_options: preference row {p.id!r} (task {p.task}) has no benchmark item of that id"
            )
        out.append(rotate_preference(p, item, rotation_for(seed, p.id, item.options)))
    return out


def circular_sft_rows(
    items: Iterable[BenchmarkItem], columns: Sequence[str], *, rotate: bool = True
) -> list[dict]:
    """SFT rows (preference-row columns ``columns``; absent ones None): one per CircularEval view of every
    item with a correct option (every view when ``rotate``, else the drawn letters only), the chosen
    response naming the correct option at its new letter and the rejected one the first other option that
    is not "None of the above". Ids are ``<item id>:rot<k>``."""
    rows = []
    for item in items:
        if item.answer is None:
            raise ValueError(
                f"circular_sft_rows: item {item.id!r} has no correct option (base setting of an "
                f"abstention task)"
            )
        for k in range(n_passes(item.options) if rotate else 1):
            options, new_of, prompt = rotated_view(item, k)
            answer = new_of[item.answer]
            wrong = next(x for x in options if x != answer and options[x] != NONE_OF_THE_ABOVE)
            row = {name: None for name in columns}
            row.update(
                id=f"{item.id}:rot{k}",
                task=item.task,
                source=item.source,
                category=item.category,
                prompt=prompt,
                media=item.media,
                chosen=f"{answer}. {options[answer]}",
                rejected=f"{wrong}. {options[wrong]}",
                source_ids=list(item.source_ids),
            )
            rows.append(row)
    return rows
