"""``PrepConfig``: every key of ``cavpref prep``, in the YAML file or as ``--key value`` (command line
wins)."""

from __future__ import annotations

import dataclasses
import glob
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from cavpref.data import ALL_TASKS, SETTINGS
from cavpref.data_prep.tasks import GENERATORS
from cavpref.data_prep.tasks.common import LLMConfig, TaskOptions
from cavpref.output_dir import OutputArguments

SPLITS = ("train", "validation", "test")
FORMATS = ("arrow", "parquet", "jsonl")
WORLD_LAYOUT = {  # where `cavpref world` writes each source (docs/synthetic_world.md)
    "music_avqa": "music_avqa/json/avqa-*.json",
    "avqa": "avqa/annotation/*_qa.json",
    "audioset": "audioset/*_segments.csv",
    "audioset_labels": "audioset/class_labels_indices.csv",
    "audioset_ontology": "audioset/ontology.json",
}


@dataclass
class PrepConfig(OutputArguments):
    """Every key can be set in the YAML file or as ``--key value`` (command line wins)."""

    output_dir: str = field(default="", metadata={"help": "output folder (required)"})
    world: str | None = field(
        default=None,
        metadata={"help": "a `cavpref world` folder: fills the inputs below that are empty from its layout"},
    )
    data_root: str | None = field(default=None, metadata={"help": "media root (default: the world folder)"})
    music_avqa: list[str] = field(default_factory=list, metadata={"help": "MUSIC-AVQA json files"})
    avqa: list[str] = field(default_factory=list, metadata={"help": "AVQA *_qa.json files"})
    audioset: list[str] = field(default_factory=list, metadata={"help": "AudioSet segment csvs"})
    custom: list[str] = field(
        default_factory=list,
        metadata={
            "help": "your own clips and questions: generic AV-QA JSONL files (docs/your_data.md); without world "
            "or data_root, the data root is the first file's folder"
        },
    )
    default_category: str = field(
        default="Existential",
        metadata={"help": "custom JSONL: category of a question that names none and matches no prefix rule"},
    )
    audioset_labels: str | None = field(default=None, metadata={"help": "class_labels_indices.csv"})
    audioset_ontology: str | None = field(default=None, metadata={"help": "ontology.json (T1/T2 tables)"})
    tasks: list[str] = field(
        default_factory=lambda: list(ALL_TASKS),
        metadata={
            "help": "tasks to generate (default: the nine benchmark tasks and CLEAN, the clean twins the paired "
            "trust score needs; tasks of modules of their own, see docs/data_prep.md 'Adding a task', are extra)"
        },
    )
    clean_rejected: str = field(
        default="abstain",
        metadata={
            "help": "the rejected response of a CLEAN row whose record has a perturbed twin: abstain (its 'None "
            "of the above' option / the twin's abstention sentence; DPO 0 -> 22.6 % paired trust in the "
            "ladder, docs/data_prep.md) | wrong_option (a wrong plausible option)",
            "choices": ["abstain", "wrong_option"],
        },
    )
    clean_anchors: bool = field(
        default=False,
        metadata={
            "help": "give every CLEAN row its perturbed twins' visual / audio anchor pairs (the original answer "
            "under clean vs perturbed media), so CAVPref's conditioned terms can run on clean items too "
            '(training: switch_table {"CLEAN": [1, 1]}); docs/training.md, Remedies'
        },
    )
    settings: list[str] = field(
        default_factory=lambda: list(SETTINGS),
        metadata={"help": "prompt settings: base and/or instruction (None of the above + instruction)"},
    )
    seed: int = field(
        default=0,
        metadata={"help": "seed of every per-record choice (options, partners, templates)"},
    )
    split_seed: int = field(default=0, metadata={"help": "seed of the clip -> split hash"})
    test_fraction: float = field(default=0.2, metadata={"help": "fraction of clips in the test split"})
    val_fraction: float = field(default=0.0, metadata={"help": "fraction of clips in the validation split"})
    num_options: int = field(
        default=4,
        metadata={"help": "options per item before None of the above is appended"},
    )
    distractors: Literal["category", "same_group"] = field(
        default="category",
        metadata={
            "help": "distractors of QA records without options (MUSIC-AVQA): any T3 answer of the question's "
            "category (paper A.2), or only those in the answer's T2 group (no instrument question offered 'Car')"
        },
    )
    probes: int = field(default=64, metadata={"help": "random candidates tried per unrelated partner clip"})
    min_partner_check: Literal["t1", "disjoint", "unchecked"] = field(
        default="disjoint",
        metadata={"help": "weakest partner relation accepted (strongest first: t1, disjoint, unchecked)"},
    )
    quiet_gain: float = field(default=0.3, metadata={"help": "CAT overlay: gain of the quiet event"})
    exclude_single_modality: bool = field(
        default=True,
        metadata={"help": "drop questions answerable from one modality (paper A.1)"},
    )
    tables_override: str | None = field(default=None, metadata={"help": "user-edited tables JSON"})
    tables_group_level: int = field(
        default=0,
        metadata={
            "help": "depth of the T2 groups in the AudioSet ontology (0: top-level supercategories; 1: one level "
            "below, e.g. 'Vehicle' instead of 'Sounds of things')"
        },
    )
    on_error: Literal["raise", "skip"] = field(
        default="raise",
        metadata={"help": "a bad record: raise (naming it) or skip and count it"},
    )
    check_media: bool = field(default=True, metadata={"help": "error (or skip) when a media file is missing"})
    negatives: Literal["template", "llm"] = field(
        default="template",
        metadata={"help": "COT-Stitch negatives: templates (offline) or an LLM endpoint"},
    )
    llm_base_url: str = field(
        default="",
        metadata={"help": "negatives=llm: endpoint (default: OPENAI_BASE_URL)"},
    )
    llm_model: str = field(default="", metadata={"help": "negatives=llm: model (default: OPENAI_MODEL)"})
    llm_api_key_env: str = field(
        default="OPENAI_API_KEY",
        metadata={"help": "negatives=llm: variable holding the API key"},
    )
    llm_on_failure: Literal["template", "error"] = field(
        default="template",
        metadata={
            "help": "negatives: llm and the endpoint fails (401, timeout): fall back to template negatives "
            "(counted in stats.json as llm_fallback and printed) or stop with the error"
        },
    )
    llm_timeout_s: float = field(
        default=60.0,
        metadata={"help": "negatives: llm: seconds one reply may take, all of it (then retried)"},
    )
    llm_max_retries: int = field(
        default=2,
        metadata={
            "help": "negatives: llm: retries of a timeout / 429 / 5xx (with backoff); once a record has failed "
            "every attempt without reaching the endpoint, it counts as down and later records are not sent"
        },
    )
    score: bool = field(
        default=False, metadata={"help": "fill clap_delta / avsm_delta_* (data_prep.scoring)"}
    )
    scoring_config: str | None = field(default=None, metadata={"help": "ScoringConfig YAML"})
    align_audioset: bool = field(
        default=False,
        metadata={
            "help": "AudioSet alignment filter: drop segments whose video and audio disagree "
            "(T_sim < align_threshold; models from scoring_config)"
        },
    )
    align_threshold: float = field(default=0.70, metadata={"help": "T_sim threshold of align_audioset"})
    rotate_options: bool = field(
        default=True,
        metadata={
            "help": "show every preference row under one CircularEval rotation drawn from (seed, id), "
            "chosen / rejected / anchor responses moved with their options (docs/data_prep.md); "
            "false: the drawn letters ('None of the above' always last)"
        },
    )
    formats: list[str] = field(
        default_factory=lambda: list(FORMATS),
        metadata={"help": "output formats (arrow, parquet, jsonl)"},
    )
    num_shards: int = field(
        default=1,
        metadata={"help": "split the build into this many shards (merge them with prep merge)"},
    )
    shard_index: int = field(
        default=0,
        metadata={"help": "which shard this process builds, in [0, num_shards)"},
    )
    num_proc: int = field(default=1, metadata={"help": "worker processes for the generators (forked)"})
    force: bool = field(default=False, metadata={"help": "rebuild even when the outputs are up to date"})
    progress: bool = field(default=True, metadata={"help": "tqdm progress bars"})

    def __post_init__(self):
        for name in ("tasks", "settings", "formats"):
            bad = [
                x
                for x in getattr(self, name)
                if x not in {"tasks": tuple(GENERATORS), "settings": SETTINGS, "formats": FORMATS}[name]
            ]
            if bad:
                raise ValueError(f"PrepConfig.{name}: unknown value(s) {bad}")
        if not 0 <= self.shard_index < self.num_shards:
            raise ValueError(f"PrepConfig: shard_index {self.shard_index} not in [0, {self.num_shards})")
        if not (
            0 <= self.test_fraction and 0 <= self.val_fraction and self.test_fraction + self.val_fraction < 1
        ):
            raise ValueError("PrepConfig: test_fraction + val_fraction must be in [0, 1)")

    def resolved(self) -> PrepConfig:
        """Inputs filled from ``world`` where empty; ``data_root`` defaulted to it (else, for custom JSONL
        files, to the first one's folder: their media paths are relative to it)."""
        if not self.world:
            if self.custom and not self.data_root:
                return dataclasses.replace(self, data_root=str(Path(self.custom[0]).resolve().parent))
            return self
        world, changes = Path(self.world), {}
        for name, pattern in WORLD_LAYOUT.items():
            if not getattr(self, name):
                found = sorted(glob.glob(str(world / pattern)))
                changes[name] = (
                    found if isinstance(getattr(self, name), list) else (found[0] if found else None)
                )
        changes["data_root"] = self.data_root or str(world)
        return dataclasses.replace(self, **changes)

    def task_options(self) -> TaskOptions:
        llm = None
        if self.negatives == "llm":
            llm = LLMConfig(
                base_url=self.llm_base_url,
                model=self.llm_model,
                api_key_env=self.llm_api_key_env,
                cache_path=str(Path(self.output_dir) / "llm_cache.sqlite"),
                on_failure=self.llm_on_failure,
                timeout=self.llm_timeout_s,
                max_retries=self.llm_max_retries,
            )
        return TaskOptions(
            num_options=self.num_options,
            distractors=self.distractors,
            probes=self.probes,
            min_partner_check=self.min_partner_check,
            quiet_gain=self.quiet_gain,
            negatives=self.negatives,
            llm=llm,
            progress=self.progress,
        )

    def splits(self) -> list[str]:
        return [s for s, f in zip(SPLITS, (1.0, self.val_fraction, self.test_fraction)) if f > 0]
