"""MCIT — Missing Choice Identification (paper Sec. 3, App. A.2).

The correct answer is removed from a plausible option set and its slot filled with another answer of the
same kind: preferably another answer of the question's category (T3) in the answer's supercategory (T2:
another instrument for an instrument), else any T2 group mate, else any T3 answer of the category; when
the whole category vocabulary is already on show, the answer is just dropped. Yes/no questions have no
answer of the same kind and are skipped. Nothing offered is right, so the correct response is to abstain
("None of the above" in the instruction setting). The tempting wrong choice — the preference pair's
rejected response — is the replacement that took the answer's place.
"""

from __future__ import annotations

import random

from cavpref.data import SETTINGS
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tasks.common import YES_NO, norm, shuffled
from cavpref.data_prep.tasks.context import Context, plausible_options, record_spec
from cavpref.data_prep.tasks.drafts import Draft, run
from cavpref.data_prep.tasks.spec import register_task, spec_from_file

SPEC = register_task(spec_from_file(__file__))  # its facts: mcit.yaml beside this file
TASK = SPEC.name


def draft(record: QARecord, ctx: Context, rng: random.Random) -> Draft | str:
    opts = plausible_options(record, ctx, rng)
    if isinstance(opts, str):
        return opts
    if norm(record.answer) in YES_NO:
        return "yes/no question: no same-kind replacement for the answer"
    view, used = ctx.view, {norm(o) for o in opts} | set(YES_NO)
    group = view.group(record.answer)
    same_category = [v for v in view.vocab(record.category) if norm(v) not in used]
    tiers = (
        ("T3+T2", [v for v in same_category if group and group in view.groups(v)]),
        ("T2", [m for m in view.members(group) if norm(m) not in used and not view.is_group(m)]),
        ("T3", same_category),
    )
    source, candidates = next(((name, c) for name, c in tiers if c), ("", []))
    if candidates:
        replacement = rng.choice(candidates)
        opts, (rejected,) = shuffled([replacement] + opts[1:], rng, 0)
    elif len(opts) >= 3:  # the vocabulary is all on show already: drop the answer, tempt with a group mate
        source, opts = "dropped", opts[1:]
        mates = [i for i, o in enumerate(opts) if group and group in view.groups(o)]
        replacement = opts[rng.choice(mates) if mates else rng.randrange(len(opts))]
        opts, _ = shuffled(opts, rng)
        rejected = opts.index(replacement)
    else:
        return "no same-category replacement for the answer"
    return Draft(
        record,
        record.question,
        opts,
        None,
        rejected,
        record_spec(record),
        record.category,
        meta={"replacement": replacement, "replacement_from": source},
    )


def generate(records, tables, *, seed: int, settings=SETTINGS, **kw):
    """MCIT items and preference examples; see :func:`data_prep.tasks.drafts.run` for the keywords."""
    return run(TASK, draft, records, tables, seed=seed, settings=settings, **kw)
