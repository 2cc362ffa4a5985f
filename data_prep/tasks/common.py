"""What the nine generators share: options, seeded choices, option text and prompt rendering.

The layers of ``data_prep.tasks``: this module (no per-build state) <- ``context.py`` (the shared
per-build state: look-up tables, clip classes, partner pools) <- ``drafts.py`` (a :class:`Draft` and
:func:`emit` / :func:`run`, which turn drafts into items) <- the nine generators.

Every random choice comes from ``rng_for(seed, task, record key, purpose)`` (a SHA-256 of those, never
Python's salted ``hash``), so an item depends only on the seed, its record and the global record pool —
not on input order, sharding or worker count.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cavpref.data import BenchmarkItem
from cavpref.data_prep.tables import normalise
from cavpref.data_prep.tasks.spec import task_spec
from cavpref.media.spec import MediaSpec, Source
from cavpref.prompts import render_prompt

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
    timeout: float = 60.0  # seconds for a whole reply
    max_retries: int = 2  # retries of timeouts / 429 / 5xx; an endpoint found down is not retried per record
    max_concurrency: int = 8
    cache_path: str | None = None  # SQLite reply cache (chat_client.ChatCache); re-runs send nothing twice
    on_failure: str = "template"  # an endpoint error: "template" (fall back, counted in stats.json) | "error"


DISTRACTORS = ("category", "same_group")


@dataclass
class TaskOptions:
    """Knobs shared by the generators (all have paper-faithful defaults)."""

    num_options: int = 4  # options before "None of the above" is appended
    distractors: str = "category"  # QA records without options: "category" (T3, paper A.2) or "same_group"
    probes: int = 64  # random candidates tried when looking for an unrelated partner clip
    min_partner_check: str = "disjoint"  # weakest accepted partner relation, one of CHECK_LEVELS
    quiet_gain: float = 0.3  # CAT overlay: gain of the quiet event
    negatives: str = "template"  # COT-Stitch negatives: "template" or "llm"
    llm: LLMConfig | None = None
    sources: dict[str, tuple[str, ...]] | None = None  # overrides TaskSpec.sources per task
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
        if self.distractors not in DISTRACTORS:
            raise ValueError(f"distractors must be one of {DISTRACTORS}, not {self.distractors!r}")

    def sources_of(self, task: str) -> tuple[str, ...]:
        return tuple((self.sources or {}).get(task, task_spec(task).sources))


# ----------------------------------------------------------------------------- seeded choices


def stable_hash(*parts: Any) -> int:
    """64-bit hash of the parts' string forms; identical in every process and Python run."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def rng_for(seed: int, task: str, key: str, purpose: str = "") -> random.Random:
    return random.Random(stable_hash(seed, task, key, purpose))


def template_index(seed: int, task: str, key: str) -> int:
    return stable_hash(seed, task, key, "template") % len(task_spec(task).templates)


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


def item_prompt(item: BenchmarkItem) -> str:
    """The prompt of an item as drawn (rotation 0): ``cavpref.prompts.render_prompt``, the renderer the
    evaluator uses for every pass."""
    return render_prompt(item.question, item.options, item.instruction, item.abstain_letter)


def response_text(letter: str, text: str) -> str:
    """How a chosen / rejected / anchor response names an option: 'B. Piano'."""
    return f"{letter}. {text}"


def source_range(spec: MediaSpec) -> Source | None:
    """The spec as one Source with a known end (needed to cut sub-ranges), else None."""
    return spec if isinstance(spec, Source) and spec.end is not None else None
