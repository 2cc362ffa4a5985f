"""ICIT — Inconsistent Choice Identification (paper Sec. 3, App. A.2).

Every option comes from outside the question's semantics: classes T1 lists as unrelated to everything
the clip and its answer are about (AVQA), topped up from the T3 answers of *other* question categories
(MUSIC-AVQA). Anything in the question's own category vocabulary, yes/no, and any word of the question is
kept out. The correct response is to abstain; the rejected response is one of the irrelevant options
(forcing an answer is the failure ICIT measures).
"""

from __future__ import annotations

import random

from cavpref.data import SETTINGS
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.common import YES_NO, norm, unique_by_norm
from cavpref.data_prep.tasks.context import Context, record_spec
from cavpref.data_prep.tasks.drafts import Draft, run
from cavpref.data_prep.tasks.spec import register_task, spec_from_file

SPEC = register_task(spec_from_file(__file__))  # its facts: icit.yaml beside this file
TASK = SPEC.name


def draft(record: QARecord, ctx: Context, rng: random.Random) -> Draft | str:
    if not record.answer:
        return "record has no answer"
    view, n = ctx.view, ctx.options.num_options
    about = {view.key(x) for x in (record.answer, *(record.options or []))} | ctx.clip_classes(record)
    question = f" {' '.join(norm(record.question).replace('?', ' ').split())} "

    def irrelevant(c: str) -> bool:
        return (
            view.key(c) not in about
            and norm(c) not in YES_NO
            and not view.is_group(c)
            and f" {norm(c)} " not in question
            and not view.in_vocab(record.category, c)
        )

    known = tuple(sorted(x for x in about if view.unrelated(x) is not None))
    taken: set[str] = set()
    picked = pick(_unrelated_to_all(ctx, known), n, rng, irrelevant, taken)
    from_t1 = len(picked)
    if from_t1 < n:
        picked += pick(_other_vocab(ctx, record.category), n - from_t1, rng, irrelevant, taken)
    if len(picked) < 2:
        return "not enough unrelated options (T1/T3)"
    rng.shuffle(picked)
    return Draft(
        record,
        record.question,
        picked,
        None,
        rng.randrange(len(picked)),
        record_spec(record),
        record.category,
        meta={"options_from": "T1" if from_t1 >= n else ("T1+T3" if from_t1 else "T3")},
    )


def pick(pool: list[str], n: int, rng: random.Random, ok, taken: set[str]) -> list[str]:
    """Up to ``n`` random members of ``pool`` passing ``ok`` and not yet ``taken`` (by norm). Probes a
    few random positions first (pools are large, checks cost), then scans the rest in random order."""
    out, seen = [], set()

    def take(c: str) -> None:
        if len(out) < n and norm(c) not in taken and ok(c):
            taken.add(norm(c))
            out.append(c)

    for _ in range(8 * n if pool else 0):
        i = rng.randrange(len(pool))
        if i not in seen:
            seen.add(i)
            take(pool[i])
        if len(out) == n or len(seen) == len(pool):
            return out
    rest = [c for i, c in enumerate(pool) if i not in seen]
    rng.shuffle(rest)
    for c in rest:
        if len(out) == n:
            break
        take(c)
    return out


def _unrelated_to_all(ctx: Context, known: tuple[str, ...]) -> list[str]:
    """Classes (as spelled in T1) that T1 calls unrelated to every class in ``known``, in T1's order."""
    if not known:
        return []
    view = ctx.view
    memo = ctx.memo.setdefault("icit_t1", {})
    if known[0] not in memo:
        memo[known[0]] = [(n, view.key(n)) for n in unique_by_norm(view.unrelated_names(known[0]))]
    common = frozenset.intersection(*(view.unrelated(x) for x in known))
    return [n for n, k in memo[known[0]] if k in common]


def _other_vocab(ctx: Context, category: str) -> list[str]:
    memo = ctx.memo.setdefault("icit_t3", {})
    if category not in memo:
        memo[category] = [
            v for cat in sorted(ctx.view.categories()) if cat != category for v in ctx.view.vocab(cat)
        ]
    return memo[category]


def generate(records, tables, *, seed: int, settings=SETTINGS, **kw):
    """ICIT items and preference examples; see :func:`data_prep.tasks.drafts.run` for the keywords."""
    return run(TASK, draft, records, tables, seed=seed, settings=settings, **kw)
