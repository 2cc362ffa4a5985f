"""The per-build state the generators share: the look-up tables, each clip's classes, partner pools.

``make_context`` builds it once per build (one pass over the records); partners are drawn from the whole
record pool sorted by key, which is what makes shards and workers produce the single-process result.
"""

from __future__ import annotations

import functools
import os
import random
from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cavpref.data_prep.records import EVENT_SOURCES, QA_SOURCES, QARecord
from cavpref.data_prep.tasks.common import (
    CHECK_LEVELS,
    YES_NO,
    TaskError,
    TaskOptions,
    class_key,
    norm,
    unique_by_norm,
)
from cavpref.media.spec import MediaError, MediaSpec, from_json, sources

# ----------------------------------------------------------------------------- look-up tables


class TableView:
    """Cached access to the T1/T2/T3 look-up tables (``data_prep.tables.LookupTables``, or any object with
    ``t1`` (class -> unrelated classes), ``t2`` (group -> members), ``t3`` (category -> vocabulary)).

    Class names are compared by ``data_prep.tables.normalise`` (the tables' own key), so 'Bagpipes',
    'bagpipe' and 'acoustic_guitar' meet their classes. ``unrelated(x)`` is None when T1 knows nothing
    about ``x``: "unknown" must read neither as "related to everything" nor as "related to nothing".
    """

    def __init__(self, tables: Any):
        self.tables = tables
        self._t1_raw = {class_key(k): vs for k, vs in (getattr(tables, "t1", None) or {}).items()}
        self._t1: dict[str, frozenset[str]] = {}
        t2 = getattr(tables, "t2", None) or {}
        self._members = {class_key(g): unique_by_norm(ms) for g, ms in t2.items()}
        self._groups: dict[str, list[str]] = defaultdict(list)
        for g, ms in t2.items():
            for m in ms:
                if class_key(g) not in self._groups[class_key(m)]:
                    self._groups[class_key(m)].append(class_key(g))
        self._t3 = {k: unique_by_norm(vs) for k, vs in (getattr(tables, "t3", None) or {}).items()}
        self._t3_norm = {k: frozenset(map(norm, vs)) for k, vs in self._t3.items()}

    key = staticmethod(lambda x: class_key(x))

    def _unrelated_key(self, k: str) -> frozenset[str] | None:
        if k not in self._t1:
            raw = self._t1_raw.get(k)
            if raw is None:
                return None
            self._t1[k] = frozenset(map(class_key, raw))
        return self._t1[k]

    def unrelated(self, x: str) -> frozenset[str] | None:
        """Normalised names of the classes T1 lists as unrelated to ``x``; None if T1 does not know ``x``."""
        return self._unrelated_key(class_key(x))

    def unrelated_names(self, key: str) -> list[str]:
        """The same list as spelled in T1 (for option text), for a normalised name."""
        return list(self._t1_raw.get(key, []))

    def groups(self, x: str) -> list[str]:
        return self._groups.get(class_key(x), [])

    def group(self, x: str) -> str | None:
        g = self.groups(x)
        return g[0] if g else None

    def is_group(self, x: str) -> bool:
        return class_key(x) in self._members

    def members(self, group: str | None) -> list[str]:
        return self._members.get(class_key(group), []) if group else []

    def vocab(self, category: str) -> list[str]:
        return self._t3.get(category, [])

    def in_vocab(self, category: str, x: str) -> bool:
        return norm(x) in self._t3_norm.get(category, frozenset())

    def categories(self) -> list[str]:
        return list(self._t3)

    def class_names(self) -> set[str]:
        """Normalised names T1 or T2 know (what the class index looks for in question text)."""
        return set(self._t1_raw) | set(self._groups)

    def relation(self, a: Iterable[str], b: Iterable[str]) -> str | None:
        """The strongest check two sets of normalised class names pass: 't1' (T1 calls every pair
        unrelated), 'disjoint' (no shared class, no shared T2 group, T1 silent), 'unchecked' (a side has
        no known class); None = related (shared class or group, or T1 knows both and does not list them)."""
        a, b = set(a), set(b)
        if not a or not b:
            return "unchecked"
        if a & b:
            return None
        t1 = True
        for x in a:
            ux = self._unrelated_key(x)
            for y in b:
                uy = self._unrelated_key(y)
                if (ux is not None and uy is not None) and y not in ux and x not in uy:
                    return None
                if not ((ux is not None and y in ux) or (uy is not None and x in uy)):
                    t1 = False
        if t1:
            return "t1"
        groups_a = {g for x in a for g in self._groups.get(x, [])}
        groups_b = {g for y in b for g in self._groups.get(y, [])}
        return None if groups_a & groups_b else "disjoint"


# ----------------------------------------------------------------------------- records and clips


@functools.lru_cache(maxsize=1 << 20)
def _spec(media: str) -> MediaSpec:
    return from_json(media)  # specs are frozen: sharing one object between records is safe


def record_spec(record: QARecord) -> MediaSpec:
    try:
        return _spec(record.media)
    except (MediaError, ValueError, KeyError, TypeError) as err:
        raise TaskError(f"{record.file}: record {record.index}: field 'media': {err}") from err


@functools.lru_cache(maxsize=1 << 20)
def _clip(media: str) -> str:
    return "|".join(sorted({s.path for s in sources(_spec(media))}))


def clip_id(record: QARecord) -> str:
    """The clip a record shows: its media source paths (MUSIC-AVQA has many questions per video)."""
    record_spec(record)  # a clear error for a bad spec
    return _clip(record.media)


def ancestor_map(ontology: Any) -> dict[str, frozenset[str]]:
    """Normalised class name -> normalised names of all its ancestors in the AudioSet ontology (a DAG)."""
    parents: dict[str, set[str]] = defaultdict(set)
    for cls in ontology.classes.values():
        for child in cls.child_ids:
            parents[child].add(cls.id)
    names, memo = ontology.names(), {}

    def up(cid: str) -> set[str]:
        if cid not in memo:
            memo[cid] = set()  # the reader refuses cycles; this only guards the recursion
            memo[cid] = set().union(*({p} | up(p) for p in parents[cid])) if parents[cid] else set()
        return memo[cid]

    out: dict[str, set[str]] = defaultdict(set)
    for cid in ontology.classes:
        out[class_key(names[cid])] |= {class_key(names[a]) for a in up(cid)}
    return {k: frozenset(v) for k, v in out.items()}


def event_label(
    record: QARecord, view: TableView, ancestors: dict[str, frozenset[str]] | None = None
) -> str | None:
    """The single event of an AudioSet segment, or None when it has several.

    AudioSet lists a sound with its ancestors ("Bark", "Dog", "Domestic animals, pets", "Animal"): with the
    ontology, a segment is single-event when one label has all the others as ancestors, and that label
    names the event. Without it, labels that are T2 group names are ignored and one must remain.
    """
    labels = unique_by_norm(record.labels)
    if len(labels) > 1 and ancestors:
        keys = [class_key(x) for x in labels]
        for label, key in zip(labels, keys):
            if all(k == key or k in ancestors.get(key, ()) for k in keys):
                return label
        return None
    if len(labels) > 1:
        labels = [x for x in labels if not view.is_group(x)]
    return labels[0] if len(labels) == 1 else None


class _NameMatcher:
    """Finds known class names (1-4 word n-grams) in question / answer text."""

    def __init__(self, names: Iterable[str]):
        self.names = set(names)
        self.max_len = min(4, max((len(n.split()) for n in self.names), default=1))

    def find(self, text: str) -> set[str]:
        words = class_key(text).split()
        found = set()
        for n in range(1, self.max_len + 1):
            for i in range(len(words) - n + 1):
                gram = " ".join(words[i : i + n])
                if gram in self.names:
                    found.add(gram)
        return found


@dataclass
class Context:
    """Everything the generators share for one build: the global record pool (sorted by key, so partners
    do not depend on input order), the tables, each clip's classes and the partner pools."""

    records: list[QARecord]
    view: TableView
    seed: int
    options: TaskOptions
    partner_key: Callable[[QARecord], Hashable] | None = None
    classes: dict[str, frozenset[str]] = field(default_factory=dict)
    ancestors: dict[str, frozenset[str]] | None = None  # from the AudioSet ontology (single-event test)
    memo: dict = field(default_factory=dict)  # per-build caches of the generators (keyed by purpose)
    _pools: dict = field(default_factory=dict)
    _events: dict = field(default_factory=dict)

    def clip_classes(self, record: QARecord) -> frozenset[str]:
        return self.classes.get(clip_id(record), frozenset())

    def event(self, record: QARecord) -> str | None:
        if record.key not in self._events:
            self._events[record.key] = event_label(record, self.view, self.ancestors)
        return self._events[record.key]

    def pool(self, kind: str, key: Hashable) -> list[QARecord]:
        """Candidate partners: one record per clip, of the ``kind``'s sources, with the same partner key."""
        if (kind, key) not in self._pools:
            srcs = {"qa": QA_SOURCES, "events": EVENT_SOURCES}[kind]
            seen, out = set(), []
            for r in self.records:
                if r.source not in srcs or (kind == "events" and self.event(r) is None):
                    continue
                if self.partner_key is not None and self.partner_key(r) != key:
                    continue
                cid = clip_id(r)
                if cid not in seen:
                    seen.add(cid)
                    out.append(r)
            self._pools[(kind, key)] = out
        return self._pools[(kind, key)]

    def partner_classes(self, record: QARecord, kind: str) -> frozenset[str]:
        if kind == "events":
            ev = self.event(record)
            return frozenset({class_key(ev)}) if ev else frozenset()
        return self.clip_classes(record)

    def find_partner(self, record: QARecord, rng: random.Random, kind: str) -> tuple[QARecord, str] | str:
        """An unrelated clip for ``record`` (paper: "non-overlapping categories", T1), or a skip reason.

        Tries ``options.probes`` random candidates and keeps the strongest relation found; accepts it if
        it is at least ``options.min_partner_check``.
        """
        key = self.partner_key(record) if self.partner_key is not None else None
        pool = self.pool(kind, key)
        if not pool:
            return "no partner clip in the pool"
        mine, my_clip = self.partner_classes(record, kind), clip_id(record)
        best, best_level = None, len(CHECK_LEVELS)
        for _ in range(min(self.options.probes, 4 * len(pool))):
            cand = pool[rng.randrange(len(pool))]
            if clip_id(cand) == my_clip:
                continue
            rel = self.view.relation(mine, self.partner_classes(cand, kind))
            if rel is not None and CHECK_LEVELS.index(rel) < best_level:
                best, best_level = cand, CHECK_LEVELS.index(rel)
                if best_level == 0:
                    break
        if best is None or best_level > CHECK_LEVELS.index(self.options.min_partner_check):
            return f"no unrelated partner clip (at least {self.options.min_partner_check!r})"
        return best, CHECK_LEVELS[best_level]


def make_context(
    records: Sequence[QARecord],
    tables: Any,
    *,
    seed: int,
    options: TaskOptions | None = None,
    partner_key: Callable[[QARecord], Hashable] | None = None,
    ontology: Any = None,
) -> Context:
    """Build the shared context once per build (the class index costs one pass over the records).

    ``ontology``: a ``data_prep.readers.Ontology`` or the path of ``ontology.json``; it tells which AudioSet
    segments hold a single event (their labels are one ancestor chain)."""
    view = tables if isinstance(tables, TableView) else TableView(tables)
    if isinstance(ontology, (str, os.PathLike)):
        from cavpref.data_prep.readers import read_ontology

        ontology = read_ontology(str(ontology))
    ordered = sorted(records, key=lambda r: r.key)
    matcher = _NameMatcher(view.class_names())
    classes: dict[str, set[str]] = defaultdict(set)
    for r in ordered:
        cid = clip_id(r)
        if r.labels:
            classes[cid].update(class_key(x) for x in r.labels if not view.is_group(x) or len(r.labels) == 1)
        else:
            classes[cid].update(matcher.find(f"{r.question} . {r.answer}"))
    return Context(
        ordered,
        view,
        seed,
        options or TaskOptions(),
        partner_key,
        {k: frozenset(v) for k, v in classes.items()},
        ancestor_map(ontology) if ontology is not None else None,
    )


# ----------------------------------------------------------------------------- QA options


def plausible_options(record: QARecord, ctx: Context, rng: random.Random) -> list[str] | str:
    """The record's answer among plausible options (the answer first), or a skip reason.

    AVQA keeps its own four options; yes/no questions get Yes/No; otherwise the answer plus distractors
    from T3 for the question's category (paper A.2), without yes/no unless the answer is one of them. With
    ``distractors: same_group`` only those in the answer's T2 group (or, for an answer in no group, in none),
    and none whose words hold the answer's or are held by them ("middle" / "In the middle"): a category's T3
    vocabulary mixes kinds (MUSIC-AVQA's Temporal: instruments, "Right", "Car"), and an instrument question
    offered "Car" reads like ICIT's irrelevant options (cavpref_lab/ladder/README.md, the ceiling).
    """
    answer = record.answer
    if not answer:
        return "record has no answer"
    if record.options:
        opts = unique_by_norm(record.options)
        if len(opts) != len(record.options):  # 4 x "Cat" would make an item with one option
            return "duplicate options in the record"
        if norm(answer) not in map(norm, opts):
            return "answer not among the record's options"
        return [answer] + [o for o in opts if norm(o) != norm(answer)]
    if norm(answer) in YES_NO:
        return [answer, "no" if norm(answer) == "yes" else "yes"]
    vocab = [v for v in ctx.view.vocab(record.category) if norm(v) != norm(answer) and norm(v) not in YES_NO]
    if ctx.options.distractors == "same_group":
        group, words = ctx.view.group(answer), norm(answer).split()
        vocab = [
            v
            for v in vocab
            if ctx.view.group(v) == group
            and not _contains(norm(v).split(), words)
            and not _contains(words, norm(v).split())  # "middle" vs "In the middle": one place, two options
        ]
        if not vocab:
            return f"no distractors for category {record.category!r} in T3 in the answer's T2 group ({group})"
    if not vocab:
        return f"no distractors for category {record.category!r} in T3"
    k = min(ctx.options.num_options - 1, len(vocab))
    return [answer] + rng.sample(vocab, k)


def _contains(words: list[str], part: list[str]) -> bool:
    """Whether ``part`` occurs in ``words`` as consecutive words."""
    n = len(part)
    return any(words[i : i + n] == part for i in range(len(words) - n + 1))
