"""A :class:`Draft` (one record's perturbation, before settings) and how it becomes items.

A generator only decides *what is wrong* with one record (a draft: options, which one is correct or that
abstaining is, which wrong one tempts, the presented media and the clean/perturbed anchors); :func:`emit`
turns a draft into the benchmark item and the preference example of every setting, with the prompt
rendered by the single function ``common.render_prompt``, so the model is trained on exactly the text it
is tested on; :func:`run` is the loop every generator shares.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tqdm.auto import tqdm

from cavpref import task_registry
from cavpref.data import (
    LETTERS,
    NONE_OF_THE_ABOVE,
    SETTINGS,
    AnchorPair,
    BenchmarkItem,
    PreferenceExample,
)
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.common import (
    TaskError,
    TaskOptions,
    display,
    item_prompt,
    norm,
    response_text,
    rng_for,
    shuffled,
    template_index,
)
from cavpref.data_prep.tasks.context import Context, make_context
from cavpref.data_prep.tasks.spec import task_spec
from cavpref.media.spec import MediaError, MediaSpec, sources, to_json


@dataclass
class Draft:
    """One record's perturbation, before settings: option texts (no "None of the above"), the correct
    option (None = abstaining is correct), the tempting wrong option, the presented media, and the
    anchors as (response option index, clean media, perturbed media)."""

    record: QARecord
    question: str
    options: list[str]
    correct: int | None
    rejected: int
    media: MediaSpec
    category: str
    visual: tuple[int, MediaSpec, MediaSpec] | None = None
    audio: tuple[int, MediaSpec, MediaSpec] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


def stream_draft(
    record: QARecord,
    opts: list[str],
    rng: random.Random,
    own: MediaSpec,
    media: MediaSpec,
    stream: str,
    meta: dict[str, Any] | None = None,
) -> Draft:
    """The abstention draft of a task that perturbs one stream (MVIT/MAIT swap it, MVT/MAT remove it): the
    original answer is the tempting rejected option, and that stream's anchor pairs it under the clean
    media vs the perturbed media (paper Eq. 2/3)."""
    opts, (answer,) = shuffled(opts, rng, 0)
    anchor = (answer, own, media)
    return Draft(
        record,
        record.question,
        opts,
        None,
        answer,
        media,
        record.category,
        visual=anchor if stream == "video" else None,
        audio=anchor if stream == "audio" else None,
        meta=meta or {},
    )


def emit(
    task: str, draft: Draft, ctx: Context, settings: Sequence[str]
) -> tuple[list[BenchmarkItem], list[PreferenceExample]]:
    """The benchmark item and preference example of each setting (paper B.1).

    base: the options as drafted and no instruction; the abstention tasks then have ``answer=None`` and
    their chosen response is the abstention sentence. instruction: "None of the above" appended as the last
    option plus the template's instruction; abstention tasks answer with that letter.
    """
    r = draft.record
    texts = [display(o) for o in draft.options]
    if len({norm(t) for t in texts} | {norm(NONE_OF_THE_ABOVE)}) != len(texts) + 1:
        raise TaskError(f"{task}: {r.file}: record {r.index}: duplicate options {texts}")
    if (draft.correct is None) != task_spec(task).abstains:
        raise TaskError(f"{task}: correct={draft.correct} contradicts TaskSpec.abstains")
    tid = template_index(ctx.seed, task, r.key)
    template = task_spec(task).templates[tid]
    question = template.question.format(question=draft.question)
    media = to_json(draft.media)
    anchors = {name: spec for name, spec in (("visual", draft.visual), ("audio", draft.audio)) if spec}
    anchor_json = {name: (i, to_json(clean), to_json(pert)) for name, (i, clean, pert) in anchors.items()}
    specs = [draft.media] + [s for _, c, p in anchors.values() for s in (c, p)]
    source_ids = sorted({s.path for spec in specs for s in sources(spec)})
    meta = {
        "record": r.key,
        "source_id": r.source_id,
        "source_question": r.question,
        "source_answer": r.answer,
        **draft.meta,
    }
    items, prefs = [], []
    for setting in settings:
        opts = texts + ([NONE_OF_THE_ABOVE] if setting == "instruction" else [])
        options = dict(zip(LETTERS, opts))
        nota = LETTERS[len(texts)] if setting == "instruction" else None
        answer = LETTERS[draft.correct] if draft.correct is not None else nota
        item = BenchmarkItem(
            id=f"{task}:{setting}:{r.key}",
            task=task,
            source=r.source,
            category=draft.category,
            question=question,
            options=options,
            answer=answer,
            setting=setting,
            template_id=tid,
            media=media,
            abstain_letter=nota,
            source_ids=source_ids,
            instruction=template.instruction if setting == "instruction" else "",
            meta=meta,
        )
        chosen = response_text(answer, options[answer]) if answer is not None else task_spec(task).abstention
        pairs = {
            name: AnchorPair(response_text(LETTERS[i], texts[i]), clean, pert)
            for name, (i, clean, pert) in anchor_json.items()
        }
        prefs.append(
            PreferenceExample(
                id=item.id,
                task=task,
                source=r.source,
                category=draft.category,
                prompt=item_prompt(item),
                media=media,
                chosen=chosen,
                rejected=response_text(LETTERS[draft.rejected], texts[draft.rejected]),
                visual=pairs.get("visual"),
                audio=pairs.get("audio"),
                source_ids=source_ids,
            )
        )
        items.append(item)
    return items, prefs


DraftFn = Callable[[QARecord, Context, random.Random], "Draft | str"]


def run(
    task: str,
    draft_fn: DraftFn,
    records: Sequence[QARecord],
    tables: Any,
    *,
    seed: int,
    settings: Sequence[str] = SETTINGS,
    context: Context | None = None,
    options: TaskOptions | None = None,
    select: Callable[[QARecord], bool] | None = None,
    partner_key: Callable[[QARecord], Hashable] | None = None,
    ontology: Any = None,
    skips: Counter | None = None,
) -> tuple[list[BenchmarkItem], list[PreferenceExample]]:
    """The loop every ``generate`` shares: eligible records (the task's sources, ``select``) in key order,
    one draft each, emitted for every setting. A record that cannot make an item is counted in ``skips``
    under its reason, so eligible = made + skipped; ``skips['eligible']`` holds the eligible count."""
    if not task_registry.is_task(task):
        raise ValueError(f"unknown task {task!r} (declared: {task_registry.task_names()})")
    bad = [s for s in settings if s not in SETTINGS]
    if bad or not settings:
        raise ValueError(f"settings must be a non-empty subset of {SETTINGS}, got {list(settings)}")
    ctx = context or make_context(
        records, tables, seed=seed, options=options, partner_key=partner_key, ontology=ontology
    )
    srcs = ctx.options.sources_of(task)
    skips = skips if skips is not None else Counter()
    items, prefs = [], []
    ordered = sorted(records, key=lambda r: r.key)
    for r in tqdm(
        ordered, desc=task, unit="rec", disable=not ctx.options.progress or len(ordered) < 5000, leave=False
    ):
        if r.source not in srcs or (select is not None and not select(r)):
            continue
        skips["eligible"] += 1
        try:
            draft = draft_fn(r, ctx, rng_for(ctx.seed, task, r.key))
        except (MediaError, KeyError, IndexError, TypeError) as err:
            raise TaskError(
                f"{task}: {r.file}: record {r.index} ({r.key}): {type(err).__name__}: {err}"
            ) from err
        if isinstance(draft, str):
            skips[draft] += 1
            continue
        i, p = emit(task, draft, ctx, settings)
        items += i
        prefs += p
    return items, prefs
