"""COT-Stitch — Compositional Order, stitched (paper Sec. 3, App. A.2).

Two semantically separate single-event AudioSet clips (an unrelated partner, T1) are played one after the
other, ``Concat([A, B])``, and the model is asked for the order of events. Options: the right order, a
negative with the same words in the wrong order (events swapped, or the preposition replaced — paper
A.2's GPT-4 negatives, written here as templates), "both at the same time", and distractor pairs of
other events. The rejected response is the wrong-order negative. ``TaskOptions(negatives="llm")`` asks an
OpenAI-compatible endpoint for the negatives instead (``data_prep.tasks.llm``).
"""

from __future__ import annotations

import random

from cavpref.data import SETTINGS
from cavpref.data_prep.records import EVENT_SOURCES, QARecord
from cavpref.data_prep.tasks.common import TaskOptions, norm, rng_for, shuffled, unique_by_norm
from cavpref.data_prep.tasks.context import Context, make_context, record_spec
from cavpref.data_prep.tasks.drafts import Draft, run
from cavpref.data_prep.tasks.spec import register_task, spec_from_file
from cavpref.media.spec import concat

SPEC = register_task(spec_from_file(__file__))  # its facts: cot_stitch.yaml beside this file
TASK = SPEC.name
CATEGORY = "Temporal"

# Event-order phrasings for COT options: (forward, preposition-replaced). forward(a, b) says "a, then b";
# replaced(a, b) keeps the words and the mention order but says "b, then a" (the paper's "replace the
# preposition" negative).
ORDER_PHRASES: tuple[tuple[str, str], ...] = (
    ("{a} is followed by {b}.", "{a} is preceded by {b}."),
    ("{a} happens before {b}.", "{a} happens after {b}."),
    ("First {a}, then {b}.", "First {b}, then {a}."),
    ("{a}, and after that {b}.", "{a}, and before that {b}."),
    ("{b} comes after {a}.", "{b} comes before {a}."),
)
SIMULTANEOUS: tuple[str, ...] = (
    "Both of them occur at the same time.",
    "{a} and {b} happen at the same time.",
    "Both events occur simultaneously.",
)


def event_pair(record: QARecord, ctx: Context, rng: random.Random) -> tuple[QARecord, str, str, str] | str:
    """(partner, event of the record, event of the partner, partner check) or a skip reason."""
    a = ctx.event(record)
    if a is None:
        return "not a single-event segment"
    found = ctx.find_partner(record, rng, "events")
    if isinstance(found, str):
        return found
    partner, check = found
    return partner, a, ctx.event(partner), check


def distractor_pairs(
    ctx: Context, rng: random.Random, avoid: set[str], k: int
) -> list[tuple[str, str]] | str:
    """``k`` pairs of other events (neither is ``avoid``) for "c followed by d"-style distractors."""
    vocab = ctx.memo.get("event_vocab")
    if vocab is None:
        labels = (ctx.event(r) for r in ctx.records if r.source in EVENT_SOURCES)
        vocab = ctx.memo["event_vocab"] = sorted(unique_by_norm(x for x in labels if x), key=norm)
    if k and len([x for x in vocab[: len(avoid) + 2] if norm(x) not in avoid]) < 2:
        return "not enough other events for distractor options"
    pairs = []
    while len(pairs) < k:  # rejection sampling: the vocabulary is large, ``avoid`` has two names
        c, d = rng.sample(vocab, 2)
        if norm(c) not in avoid and norm(d) not in avoid:
            pairs.append((c, d))
    return pairs


def order_options(a: str, b: str, ctx: Context, rng: random.Random) -> tuple[list[str], int, int] | str:
    """Options about "a, then b": (options, index of the a-then-b option, index of the b-then-a one)."""
    forward, replaced = rng.choice(ORDER_PHRASES)
    right = forward.format(a=a, b=b)
    wrong = rng.choice([forward.format(a=b, b=a), replaced.format(a=a, b=b)])
    pairs = distractor_pairs(ctx, rng, {norm(a), norm(b)}, ctx.options.num_options - 3)
    if isinstance(pairs, str):
        return pairs
    opts = [right, wrong, rng.choice(SIMULTANEOUS).format(a=a, b=b)]
    opts += [forward.format(a=c, b=d) for c, d in pairs]
    if len(unique_by_norm(opts)) != len(opts):
        return "duplicate options (the events have the same name)"
    opts, (i_right, i_wrong) = shuffled(opts, rng, 0, 1)
    return opts, i_right, i_wrong


def right_option(a: str, b: str, rng: random.Random) -> str:
    """The "a, then b" option of the LLM negatives' prompt (one of :data:`ORDER_PHRASES`)."""
    return rng.choice(ORDER_PHRASES)[0].format(a=a, b=b)


def draft(record: QARecord, ctx: Context, rng: random.Random) -> Draft | str:
    found = event_pair(record, ctx, rng)
    if isinstance(found, str):
        return found
    partner, a, b, check = found
    meta = {"partner": partner.key, "partner_check": check, "events": [a, b], "negatives": "template"}
    made = None
    if ctx.options.negatives == "llm":
        from cavpref.data_prep.tasks.llm import llm_order_options

        made = llm_order_options(a, b, right_option(a, b, rng), ctx, rng)
        meta["negatives"] = f"template ({made})" if isinstance(made, str) else "llm"  # counted in stats.json
        made = None if isinstance(made, str) else made
    made = made or order_options(a, b, ctx, rng)
    if isinstance(made, str):
        return made
    opts, right, wrong = made
    media = concat(record_spec(record), record_spec(partner))
    return Draft(record, "", opts, right, wrong, media, CATEGORY, meta=meta)


def prefetch_llm(records, ctx: Context, select=None) -> None:
    """Send every LLM request of the build at once (bounded concurrency, cached), so the draft pass
    below finds each reply in the cache: same seeds, same partners, same prompts."""
    from cavpref.data_prep.tasks import llm

    requests = []
    for r in sorted(records, key=lambda r: r.key):
        if r.source not in ctx.options.sources_of(TASK) or (select is not None and not select(r)):
            continue
        rng = rng_for(ctx.seed, TASK, r.key)
        found = event_pair(r, ctx, rng)
        if not isinstance(found, str):
            _, a, b, _ = found
            requests.append(llm.messages(a, b, right_option(a, b, rng), ctx.options.num_options - 1))
    if ctx.options.llm is not None and ctx.options.llm.cache_path:
        llm.client(ctx).chat_many(requests, desc="COT-Stitch negatives")


def generate(records, tables, *, seed: int, settings=SETTINGS, **kw):
    """COT-Stitch items and preference examples; see :func:`data_prep.tasks.drafts.run` for the keywords."""
    ctx = kw.get("context")
    if (ctx.options if ctx else kw.get("options") or TaskOptions()).negatives == "llm":
        ctx = kw["context"] = ctx or make_context(
            records,
            tables,
            seed=seed,
            options=kw.pop("options", None),
            partner_key=kw.pop("partner_key", None),
            ontology=kw.pop("ontology", None),
        )
        prefetch_llm(records, ctx, kw.get("select"))
    return run(TASK, draft, records, tables, seed=seed, settings=settings, **kw)
