"""CAT — Compositional Attribute binding (paper Sec. 3, App. A.2; Winoground style).

Two unrelated single-event snippets are combined so that each carries a different value of one
attribute, and the options use the same words with the attribute bound the other way round:

- overlay: ``Overlay([A, B], gains=(1, quiet_gain))`` — "A is loud and B is quiet" vs
  "A is quiet and B is loud";
- concat: the whole of A, then a third of A's length of B — "a long A and a short B" vs the swap
  (needs segments with a known end; otherwise overlay is used).

Further options: both equal ("A and B are equally loud") and the same binding over other events. The
correct option is the right binding; the rejected response is the swapped one.
"""

from __future__ import annotations

import random

from cavpref.data import SETTINGS
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.common import norm, shuffled, source_range, unique_by_norm
from cavpref.data_prep.tasks.context import Context, record_spec
from cavpref.data_prep.tasks.cot_stitch import distractor_pairs, event_pair
from cavpref.data_prep.tasks.drafts import Draft, run
from cavpref.data_prep.tasks.spec import register_task, spec_from_file
from cavpref.media.spec import Source, concat, overlay

SPEC = register_task(spec_from_file(__file__))  # its facts: cat.yaml beside this file
TASK = SPEC.name
CATEGORY = "Comparative"
MIN_SHORT = 0.5  # seconds: a shorter snippet is hardly an event

# CAT (Winoground-style) bindings: the same words, different attribute bindings. {p}/{q}: the two events
# in mention order; {hi}/{lo}: the attribute words bound to them.
BINDINGS: tuple[str, ...] = (
    "{p} is {hi} and {q} is {lo}.",
    "A {hi} sound of {p} and a {lo} sound of {q}.",
    "The {p} sound is {hi}, the {q} sound is {lo}.",
)
EQUAL_BINDINGS: tuple[str, ...] = (
    "{p} and {q} are equally {hi}.",
    "Both {p} and {q} are {hi}.",
)
ATTRIBUTE_WORDS: dict[str, tuple[tuple[str, str], ...]] = {
    "loudness": (("loud", "quiet"), ("loud", "soft"), ("strong", "faint")),
    "duration": (("long", "short"), ("lasting", "brief")),
}


def binding(template: str, first: str, second: str, first_word: str, second_word: str) -> str:
    return template.format(p=first, q=second, hi=first_word, lo=second_word)


def draft(record: QARecord, ctx: Context, rng: random.Random) -> Draft | str:
    found = event_pair(record, ctx, rng)
    if isinstance(found, str):
        return found
    partner, a, b, check = found
    A, B = record_spec(record), record_spec(partner)
    ra, rb = source_range(A), source_range(B)
    mode = rng.choice(("overlay", "concat")) if ra and rb else "overlay"
    if mode == "concat":
        short = min(rb.end - rb.start, (ra.end - ra.start) / 3)
        if short < MIN_SHORT:
            mode = "overlay"
    if mode == "overlay":
        media, attribute = overlay(A, B, gains=(1.0, ctx.options.quiet_gain), video=0), "loudness"
    else:
        media, attribute = concat(A, Source(rb.path, rb.start, rb.start + short)), "duration"
    hi, lo = rng.choice(ATTRIBUTE_WORDS[attribute])
    template = rng.choice(BINDINGS)
    # a carries `hi`, b carries `lo`; the mention order is random so "first mentioned" never gives it away
    first, second, w1, w2 = (a, b, hi, lo) if rng.random() < 0.5 else (b, a, lo, hi)
    right = binding(template, first, second, w1, w2)
    wrong = binding(template, first, second, w2, w1)
    equal = rng.choice(EQUAL_BINDINGS).format(p=first, q=second, hi=hi)
    pairs = distractor_pairs(ctx, rng, {norm(a), norm(b)}, ctx.options.num_options - 3)
    if isinstance(pairs, str):
        return pairs
    opts = [right, wrong, equal] + [binding(template, c, d, hi, lo) for c, d in pairs]
    if len(unique_by_norm(opts)) != len(opts):
        return "duplicate options (the events have the same name)"
    opts, (i_right, i_wrong) = shuffled(opts, rng, 0, 1)
    return Draft(
        record,
        "",
        opts,
        i_right,
        i_wrong,
        media,
        CATEGORY,
        meta={
            "partner": partner.key,
            "partner_check": check,
            "events": [a, b],
            "mode": mode,
            "attribute": attribute,
            "binding": {a: hi, b: lo},
        },
    )


def generate(records, tables, *, seed: int, settings=SETTINGS, **kw):
    """CAT items and preference examples; see :func:`data_prep.tasks.drafts.run` for the keywords."""
    return run(TASK, draft, records, tables, seed=seed, settings=settings, **kw)
