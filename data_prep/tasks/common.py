"""What the nine generators share: options, seeded choices, option text, prompt rendering, item emission.

(The shared per-build state — look-up tables, clip classes, partner pools — is in ``context.py``.)

A generator only decides *what is wrong* with one record (a :class:`Draft`: options, which one is correct
or that abstaining is, which wrong one tempts, the presented media and the clean/perturbed anchors);
:func:`emit` turns a draft into the benchmark item and the preference example of every setting, with the
prompt rendered by the single function :func:`render_prompt`, so the model is trained on exactly the text
it is tested on.

Every random choice comes from ``rng_for(seed, task, record key, purpose)`` (a SHA-256 of those, never
Python's salted ``hash``), so an item depends only on the seed, its record and the global record pool —
not on input order, sharding or worker count.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm

from cavpref.data import (
    ABSTAIN_TASKS,
    ALL_TASKS,
    LETTERS,
    NONE_OF_THE_ABOVE,
    SETTINGS,
    AnchorPair,
    BenchmarkItem,
    PreferenceExample,
)
from cavpref.media.spec import MediaError, MediaSpec, Source, sources, to_json
from cavpref.data_prep.records import QARecord
from cavpref.data_prep.tables import normalise
from cavpref.data_prep.tasks.templates import ABSTENTIONS, TEMPLATES

if TYPE_CHECKING:
    from cavpref.data_prep.tasks.context import Context

# Which sources each task draws its records from (paper App. A.2): the adversarial suite from AVQA and
# MUSIC-AVQA, compositional reasoning from AudioSet, modality dependency from MUSIC-AVQA.
TASK_SOURCES: dict[str, tuple[str, ...]] = {
    "MCIT": ("avqa", "music_avqa"),
    "ICIT": ("avqa", "music_avqa"),
    "MVIT": ("avqa", "music_avqa"),
    "MAIT": ("avqa", "music_avqa"),
    "COT-Stitch": ("audioset",),
    "COT-Swap": ("audioset",),
    "CAT": ("audioset",),
    "MVT": ("music_avqa",),
    "MAT": ("music_avqa",),
    "CLEAN": ("avqa", "music_avqa"),
}
# Modality labels meaning "answerable from one modality" (MUSIC-AVQA type[0], AVQA question_relation).
SINGLE_MODALITY_LABELS = frozenset({"Audio", "Visual", "View", "Sound"})
YES_NO = ("yes", "no")
CHECK_LEVELS = ("t1", "disjoint", "unchecked")  # partner relation, strongest first


class TaskError(ValueError):
    """A record a generator cannot use although it passed validation; names task, file, record, field."""


@dataclass
class LLMConfig:
    """OpenAI-compatible chat endpoint for COT-Stitch negatives; empty fields fall back to OPENAI_BASE_URL /
    OPENAI_MODEL in the environment, the key to OPENAI_API_KEY."""

    base_url: str = ""
    model: str = ""
    api_key_env: str = "OPENAI_API_KEY"  # name of the variable holding the key (the key is never stored)
    timeout: float = 60.0
    max_concurrency: int = 8
    cache_path: str | None = None  # SQLite reply cache (eval.judge.ChatCache); re-runs send nothing twice
    on_failure: str = "template"  # an endpoint error: "template" (fall back, counted in stats.json) | "error"


@dataclass
class TaskOptions:
    """Knobs shared by the generators (all have paper-faithful defaults)."""

    num_options: int = 4  # options before "None of the above" is appended
    probes: int = 64  # random candidates tried when looking for an unrelated partner clip
    min_partner_check: str = "disjoint"  # weakest accepted partner relation, one of CHECK_LEVELS
    quiet_gain: float = 0.3  # CAT overlay: gain of the quiet event
    negatives: str = "template"  # COT-Stitch negatives: "template" or "llm"
    llm: LLMConfig | None = None
    sources: dict[str, tuple[str, ...]] | None = None  # overrides TASK_SOURCES per task
    progress: bool = True  # tqdm bar per task (shown for 5000+ records)

    def __post_init__(self):
        if self.min_partner_check not in CHECK_LEVELS:
            raise ValueError(
                f"min_partner_check must be one of {CHECK_LEVELS}, not {self.min_partner_check!r}"
            )
        if self.negatives not in ("template", "llm"):
            raise ValueError(f"negatives must be 'template' or 'llm', not {self.negatives!r}")
        if self.num_options < 3:
            raise ValueError(f"num_options must be at least 3, not {self.num_options}")

    def sources_of(self, task: str) -> tuple[str, ...]:
        return tuple((self.sources or {}).get(task, TASK_SOURCES[task]))


# ----------------------------------------------------------------------------- seeded choices


def stable_hash(*parts: Any) -> int:
    """64-bit hash of the parts' string forms; identical in every process and Python run."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def rng_for(seed: int, task: str, key: str, purpose: str = "") -> random.Random:
    return random.Random(stable_hash(seed, task, key, purpose))


def template_index(seed: int, task: str, key: str) -> int:
    return stable_hash(seed, task, key, "template") % len(TEMPLATES[task])


def shuffled(
    options: list[str], rng: random.Random, *marks: int | None
) -> tuple[list[str], list[int | None]]:
    """Options in a random order, and the new positions of the marked indices (None stays None)."""
    order = list(range(len(options)))
    rng.shuffle(order)
    new_pos = {old: new for new, old in enumerate(order)}
    return [options[i] for i in order], [None if m is None else new_pos[m] for m in marks]


# ----------------------------------------------------------------------------- text


@functools.lru_cache(maxsize=1 << 20)
def class_key(name: str) -> str:
    """The tables' own name key (``data_prep.tables.normalise``), memoised: it is on every hot path."""
    return normalise(name)


@functools.lru_cache(maxsize=1 << 20)
def norm(text: str) -> str:
    """Comparison key: 'Acoustic_Guitar ' -> 'acoustic guitar'."""
    return re.sub(r"\s+", " ", str(text).replace("_", " ")).strip().lower().rstrip(".")


def display(text: str) -> str:
    """Option text as shown: underscores to spaces, first letter capitalised ('acoustic_guitar' ->
    'Acoustic guitar'); text with capitals of its own keeps them."""
    text = re.sub(r"\s+", " ", str(text).replace("_", " ")).strip()
    return text[:1].upper() + text[1:]


def unique_by_norm(texts: Iterable[str]) -> list[str]:
    seen, out = set(), []
    for t in texts:
        if norm(t) not in seen:
            seen.add(norm(t))
            out.append(t)
    return out


def render_prompt(question: str, options: dict[str, str], instruction: str = "") -> str:
    """THE prompt text of an item: question, one 'L. text' line per option, then the instruction (if any).

    Benchmark items and preference examples both use this, so a model is trained on the text it is tested
    on. The evaluator renders each CircularEval pass with ``eval.avtrustbench.format_prompt`` (the same
    layout, with ``{abstain_letter}`` in the instruction filled in for the rotated letters).
    """
    lines = [question, *(f"{letter}. {text}" for letter, text in options.items())]
    if instruction:
        lines.append(instruction)
    return "\n".join(lines)


def item_prompt(item: BenchmarkItem) -> str:
    return render_prompt(item.question, item.options, item.instruction)


def response_text(letter: str, text: str) -> str:
    """How a chosen / rejected / anchor response names an option: 'B. Piano'."""
    return f"{letter}. {text}"


# ----------------------------------------------------------------------------- drafts and emission


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


def stream_draft(record: QARecord, opts: list[str], rng: random.Random, own: MediaSpec, media: MediaSpec,
                 stream: str, meta: dict[str, Any] | None = None) -> Draft:
    """The abstention draft of a task that perturbs one stream (MVIT/MAIT swap it, MVT/MAT remove it): the
    original answer is the tempting rejected option, and that stream's anchor pairs it under the clean
    media vs the perturbed media (paper Eq. 2/3)."""
    opts, (answer,) = shuffled(opts, rng, 0)
    anchor = (answer, own, media)
    return Draft(record, record.question, opts, None, answer, media, record.category,
                 visual=anchor if stream == "video" else None, audio=anchor if stream == "audio" else None,
                 meta=meta or {})


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
    if (draft.correct is None) != (task in ABSTAIN_TASKS):
        raise TaskError(f"{task}: correct={draft.correct} contradicts ABSTAIN_TASKS")
    tid = template_index(ctx.seed, task, r.key)
    template = TEMPLATES[task][tid]
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
        chosen = response_text(answer, options[answer]) if answer is not None else ABSTENTIONS[task]
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


DraftFn = Callable[[QARecord, "Context", random.Random], "Draft | str"]


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
    if task not in ALL_TASKS:
        raise ValueError(f"unknown task {task!r}")
    bad = [s for s in settings if s not in SETTINGS]
    if bad or not settings:
        raise ValueError(f"settings must be a non-empty subset of {SETTINGS}, got {list(settings)}")
    from cavpref.data_prep.tasks.context import make_context

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


def source_range(spec: MediaSpec) -> Source | None:
    """The spec as one Source with a known end (needed to cut sub-ranges), else None."""
    return spec if isinstance(spec, Source) and spec.end is not None else None
