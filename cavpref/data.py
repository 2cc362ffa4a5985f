"""The data model shared by every stage: benchmark items and preference examples.

data_prep writes them, the trainer and the evaluator read them, so they are plain dataclasses with a
flat row form (``to_row`` / ``from_row``) that HF ``datasets`` stores as Arrow/Parquet columns. Media are
kept as canonical MediaSpec JSON strings: a row never holds decoded frames.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from cavpref import task_registry
from cavpref.media.spec import MediaSpec, from_json, to_json

# The paper's nine tasks and CLEAN: the built-in defaults (``cavpref.task_registry``). Code that must also see
# tasks added later (a tenth task's module) asks the registry (``task_registry.task_names()``, ...) instead.
TASKS = tuple(t.name for t in task_registry.BUILTIN_TASKS if t.dimension != task_registry.REFERENCE)
# The unperturbed questions, with the correct answer among the options: not an AVTrustBench task, but the
# reference every perturbation is measured against (the quickstart's SFT data and its "clean accuracy",
# which shows whether a trained model still answers or has collapsed to abstaining everywhere).
CLEAN_TASK = "CLEAN"
ALL_TASKS = TASKS + (CLEAN_TASK,)
DIMENSIONS = {
    d: tuple(t.name for t in task_registry.BUILTIN_TASKS if t.dimension == d)
    for d in task_registry.DIMENSION_NAMES[:3]
}
CATEGORIES = ("Existential", "Localization", "Count", "Temporal", "Comparative", "World knowledge")
SETTINGS = ("base", "instruction")
# Tasks whose correct response is to abstain ("None of the above" / "the audio is missing" / ...).
ABSTAIN_TASKS = tuple(t.name for t in task_registry.BUILTIN_TASKS if t.abstains)
NONE_OF_THE_ABOVE = "None of the above"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def check_limit(limit: int | None) -> int | None:
    """The one meaning of an item ``limit`` (``cavpref eval --limit``, the quickstart's ``--eval_limit``): the
    first N items of each task; 0 or None = all of them; negative is an error."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 (0 = all items), got {limit}")
    return limit or None


def _spec_json(spec: MediaSpec | str | None) -> str | None:
    if spec is None or isinstance(spec, str):
        return spec
    return to_json(spec)


@dataclass
class BenchmarkItem:
    """One multiple-choice question exactly as a model is tested on it.

    ``answer`` is the correct letter; ``None`` means the correct response is an abstention with no
    option to pick (the ``base`` setting of the abstention tasks). ``abstain_letter`` is the letter of the
    "None of the above" option when the item has one.
    """

    id: str
    task: str
    source: str
    category: str
    question: str
    options: dict[str, str]
    answer: str | None
    setting: str
    template_id: int
    media: str  # canonical MediaSpec JSON
    abstain_letter: str | None = None
    source_ids: list[str] = field(default_factory=list)
    instruction: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        self.media = _spec_json(self.media)
        if self.benchmark == "avtrustbench" and not task_registry.is_task(self.task):
            raise ValueError(
                f"item {self.id}: unknown task {self.task!r} (expected one of {task_registry.task_names()})"
            )
        if self.setting not in SETTINGS:
            raise ValueError(f"item {self.id}: unknown setting {self.setting!r}")
        if self.answer is not None and not isinstance(self.answer, str):  # NaN: "float is not iterable"
            raise ValueError(
                f"item {self.id}: field 'answer' must be an option letter or null, got {self.answer!r:.40}"
            )
        if self.benchmark == "avtrustbench":
            self._check_texts()
        if self.answer is not None and any(x not in self.options for x in self.answer_letters):
            raise ValueError(
                f"item {self.id}: answer {self.answer!r} is not among options {list(self.options)}"
            )

    def _check_texts(self) -> None:
        """What prep refuses, refused when an item file is read too (a hand-made or edited benchmark): an
        empty question, an empty or non-text option, two options that read the same."""
        if not isinstance(self.question, str) or not self.question.strip():
            raise ValueError(f"item {self.id}: field 'question' is empty")
        seen: dict[str, str] = {}
        for letter, text in self.options.items():
            if not isinstance(text, str) or not text.strip():
                raise ValueError(
                    f"item {self.id}: field 'option_texts': option {letter} is empty ({text!r:.40})"
                )
            key = " ".join(text.split()).lower().rstrip(".")
            if key in seen:
                raise ValueError(
                    f"item {self.id}: field 'option_texts': options {seen[key]} and {letter} are the same "
                    f"({text!r:.60})"
                )
            seen[key] = letter

    @property
    def benchmark(self) -> str:
        """Which benchmark the item belongs to: ``meta["benchmark"]``, default "avtrustbench". Items of the
        other benchmarks (AURA, MMAR, TraceAV-Bench) keep their own task names, so only AVTrustBench items
        are checked against the declared tasks (``cavpref.task_registry``). Kept in ``meta`` so the Arrow schema does not change."""
        return (
            str(self.meta.get("benchmark", "avtrustbench")) if isinstance(self.meta, dict) else "avtrustbench"
        )

    @property
    def answer_letters(self) -> tuple[str, ...]:
        """The correct letter(s): ``"B"`` -> ("B",); a multi-choice answer is stored as ``"A,C"``."""
        if self.answer is None:
            return ()
        return tuple(x.strip() for x in self.answer.split(",")) if "," in self.answer else (self.answer,)

    @property
    def spec(self) -> MediaSpec:
        return from_json(self.media)

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        # Arrow needs a fixed schema: options as parallel lists, meta as JSON.
        row["option_letters"] = list(self.options)
        row["option_texts"] = list(self.options.values())
        del row["options"]
        import json

        row["meta"] = json.dumps(self.meta, sort_keys=True)
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> BenchmarkItem:
        import json
        from dataclasses import MISSING, fields

        row = dict(row)
        required = [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]
        missing = [k for k in required if k != "options" and k not in row]
        missing += [k for k in ("option_letters", "option_texts") if k not in row]
        if missing:  # in words, not a raw KeyError / TypeError from the constructor
            raise ValueError(", ".join(f"missing field {k!r}" for k in missing))
        letters, texts = row.pop("option_letters"), row.pop("option_texts")
        if len(letters) != len(texts) or len(set(letters)) != len(letters):  # zip would drop options silently
            raise ValueError(
                f"{len(letters)} option_letters {list(letters)} but {len(texts)} option_texts "
                "(they must pair one to one, letters distinct)"
            )
        row["options"] = dict(zip(letters, texts))
        meta = row.get("meta") or "{}"
        row["meta"] = json.loads(meta) if isinstance(meta, str) else meta
        return cls(**row)


@dataclass
class AnchorPair:
    """One response under clean vs perturbed media (the visual or audio term of CAVPref)."""

    response: str
    clean: str  # MediaSpec JSON: (V_w, A_w)
    perturbed: str  # (V_l, A_w) for the visual term, (V_w, A_l) for the audio term

    def __post_init__(self):
        self.clean = _spec_json(self.clean)
        self.perturbed = _spec_json(self.perturbed)


@dataclass
class PreferenceExample:
    """One CAVPref training row (paper Eq. 1-3): the ``y`` pair under the presented media, and the
    visual / audio anchors where the task perturbs that stream. Which anchors the loss uses is decided by
    the trainer's switch table, not here, so the same data serves the paper's and the released code's
    variants."""

    id: str
    task: str
    source: str
    category: str
    prompt: str
    media: str  # presented (perturbed) media, MediaSpec JSON
    chosen: str
    rejected: str
    visual: AnchorPair | None = None
    audio: AnchorPair | None = None
    clap_delta: float | None = None
    avsm_delta_v: float | None = None
    avsm_delta_a: float | None = None
    source_ids: list[str] = field(default_factory=list)
    #: whether the row's video sound is interleaved with its frames by time (Qwen2.5-Omni's flag, ms-swift's
    #: per-row column of that name); None: the recipe's ``use_audio_in_video``. Every slot of the row uses it.
    use_audio_in_video: bool | None = None

    def __post_init__(self):
        self.media = _spec_json(self.media)
        if self.use_audio_in_video is not None and not isinstance(self.use_audio_in_video, bool):
            raise ValueError(
                f"preference {self.id}: use_audio_in_video must be true, false or null, got "
                f"{self.use_audio_in_video!r}"
            )
        if not task_registry.is_task(self.task):
            raise ValueError(
                f"preference {self.id}: unknown task {self.task!r} "
                f"(expected one of {task_registry.task_names()})"
            )
        if isinstance(self.visual, dict):
            self.visual = AnchorPair(**self.visual)
        if isinstance(self.audio, dict):
            self.audio = AnchorPair(**self.audio)

    def to_row(self) -> dict[str, Any]:
        row = {k: v for k, v in asdict(self).items() if k not in ("visual", "audio")}
        for name in ("visual", "audio"):
            pair = getattr(self, name)
            row[f"{name}_response"] = pair.response if pair else None
            row[f"{name}_clean"] = pair.clean if pair else None
            row[f"{name}_perturbed"] = pair.perturbed if pair else None
        return row

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> PreferenceExample:
        row = dict(row)
        anchors = {}
        for name in ("visual", "audio"):
            resp, clean, pert = (row.pop(f"{name}_{k}", None) for k in ("response", "clean", "perturbed"))
            anchors[name] = AnchorPair(resp, clean, pert) if resp is not None else None
        return cls(**row, **anchors)
