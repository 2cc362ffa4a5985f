"""The keys of ``cavpref quickstart`` (``QuickstartConfig``) and its presets.

A user sets a handful of keys (``--help``: where the run goes, its seed, which methods, how it is evaluated,
the CPU numerics) and picks a ``preset``; the preset fills every other key: the sizes of the world and the
model, the training schedule, and the perception knobs that decide how well the starting model sees and hears
(``--help_all`` lists them by group, each with its preset values). A key given in the config file or on the
command line wins over the preset.

* ``default`` — the fast start (the whole run ~17 min on a quiet 2-core machine); its start does not name what
  it sees.
* ``perceiving`` — the start that sees and hears (docs/quickstart.md): 256-wide thinker, 84 × 84 frames, the
  caption wordings and stream-dropped caption rows that the lab log (docs/lab/quickstart_start.md) found.
* ``small`` — a one-minute pipeline check (CI): tiny world, few steps; it says nothing about the science.

Knobs that were tried and not adopted (a red spotlight, shape sizes and slot spreads, a 112-px frame width, the
M-RoPE base, the tower learning rate, one-entity caption rows, onset-stamped "hear" captions, level ratios, the
"hear" rows without the video in the mixed SFT, the place-first "where" wording) are not keys any more; what
each measured is in the lab log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from cavpref.cpu import CPU_ISAS
from cavpref.data import check_limit
from cavpref.data_prep.synthetic import WorldConfig
from cavpref.data_prep.tasks.common import DISTRACTORS
from cavpref.output_dir import OutputArguments
from cavpref.terms import ANCPO_TERMS, CAVPREF_TERMS

METHODS = ("sft", "dpo", "cavpref_norobust", "cavpref", "cavpref_fixed_beta", "cavpref_anchored")
LABELS = {
    "start": "ZS (start)",
    "sft": "SFT",
    "dpo": "DPO",
    "cavpref_norobust": "CAVPref w/o Robustness",
    "cavpref": "CAVPref",
    "cavpref_fixed_beta": "CAVPref (fixed β)",
    "cavpref_anchored": "CAVPref + anchored preference",
}
# The `cavpref train` method of each quickstart method (the fixed-β row is CAVPref with β pinned), and the
# methods whose β the trainer calibrates from the scored deltas (with --calibrate_beta, the default).
TRAIN_METHOD = {"cavpref_fixed_beta": "cavpref", "cavpref_anchored": "cavpref"}
CALIBRATED = ("cavpref_norobust", "cavpref", "cavpref_anchored")
# The recipe keys a method adds to its `cavpref train` method's: CAVPref's terms plus mDPO's anchored preference
# on each (docs/training.md, "Remedies"), the objective the remedies' 3-seed table recommends
# (cavpref_lab/ladder/README.md, "Remedies, three seeds").
METHOD_KEYS = {"cavpref_anchored": {"loss_type": [*CAVPREF_TERMS, *ANCPO_TERMS]}}
# What a run trains unless --methods says otherwise: Table 5's rows and the fixed-β control; a method that adds
# terms (METHOD_KEYS) is asked for (the default run's measured tables in docs/quickstart.md are without it).
DEFAULT_METHODS = tuple(m for m in METHODS if m not in METHOD_KEYS)
# The keys passed to both worlds' WorldConfig (QuickstartConfig.world_keys).
WORLD_KEYS = ("background_ramp",)
# How the "who sounds where" captions word a place (data.clip_captions): "Violin on the left" / "Violin: left".
CAPTION_PLACES = ("phrase", "label")
# How the "what do you see" captions list what is on screen: "Violin, Drum" / "left: Violin, middle: Drum".
CAPTION_SEE = ("names", "slots")

SIZE, SCHEDULE, PERCEPTION = (
    "size (set by --preset)",
    "schedule (set by --preset)",
    "perception (set by --preset)",
)

CPU = "CPU numerics (the same in every preset)"
# The default preset's values of every grouped key (``--help_all`` shows each group under its name).
_GROUPS = {
    SIZE: {
        "num_clips": 96,
        "caption_clips": 384,
        "hidden_size": 128,
        "num_hidden_layers": 4,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "intermediate_size": 384,
        "vision_hidden_size": 128,
        "vision_depth": 2,
        "audio_d_model": 64,
        "audio_layers": 2,
        "vocab_size": 1500,
        "num_frames": 8,
        "frame_size": 56,
        "audio_seconds": 4.0,
        "batch_size": 8,
    },
    SCHEDULE: {
        # half the steps the start had until issue 56's re-measurement (2000 / 1000): at those the default run
        # took 24 min 51 s on a quiet 2-core machine, over the 20-min budget (docs/quickstart.md)
        "caption_steps": 1000,
        "sft_steps": 500,
        "pref_steps": 120,
        "clap_steps": 1000,
        "clip_steps": 300,
        "caption_learning_rate": 5e-4,
        "sft_learning_rate": 5e-4,
        "pref_learning_rate": 2e-4,
    },
    PERCEPTION: {
        "background_ramp": 0,
        "caption_places": "phrase",
        "caption_see": "names",
        "muted_see": 0,
        "blind_hear": 0,
        "caption_repeats": 4,
    },
}
_DEFAULT = {"eval_limit": 40, **{k: v for group in _GROUPS.values() for k, v in group.items()}}
#: Every preset-controlled key's value in each preset (a key set in the file or on the command line wins).
PRESETS: dict[str, dict] = {
    "default": _DEFAULT,
    "perceiving": {
        **_DEFAULT,
        "hidden_size": 256,
        "frame_size": 84,
        "num_frames": 4,
        "caption_steps": 2000,
        "sft_steps": 3000,
        "sft_learning_rate": 1e-4,
        "background_ramp": 100,
        "caption_places": "label",
        "caption_see": "slots",
        "muted_see": 1,
        "blind_hear": 1,
    },
    "small": {
        **_DEFAULT,
        "num_clips": 12,
        "caption_clips": 6,
        "hidden_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "intermediate_size": 64,
        "vision_hidden_size": 32,
        "vision_depth": 1,
        "audio_d_model": 32,
        "audio_layers": 1,
        "num_frames": 4,
        "caption_steps": 2,
        "sft_steps": 6,
        "pref_steps": 3,
        "clap_steps": 10,
        "clip_steps": 10,
        "eval_limit": 3,
    },
}


#: A whole run of each preset, measured with ``/usr/bin/time -v cavpref quickstart --preset P`` on a quiet 2-core
#: machine (the default: the median of 2 runs, docs/quickstart.md "The default run, measured"; the others:
#: cavpref_lab/science/README.md, "Wall time"): the overall estimate the run prints before its first stage.
MEASURED_WALL = {"default": "16 min 48 s", "perceiving": "46 min 39 s", "small": "57 s"}


def _preset(name: str, what: str, **extra):
    """A preset-controlled field: None until ``__post_init__`` fills it from the preset; its help lists the
    presets' values."""
    shown = " / ".join(f"{preset} {keys[name]}" for preset, keys in PRESETS.items())
    return field(default=None, metadata={"help": f"{what} (preset: {shown})", **extra})


@dataclass
class QuickstartConfig(OutputArguments):
    """The run's keys. The preset fills every key left unset (None); see the module doc."""

    out: str = field(default="runs/quickstart", metadata={"help": "run folder (every stage writes below it)"})
    preset: str = field(
        default="default",
        metadata={
            "help": "sizes, schedule and perception knobs, each with its whole run measured on a quiet 2-core "
            f"machine: default (the fast start, {MEASURED_WALL['default']}), perceiving (the start that sees and "
            f"hears, {MEASURED_WALL['perceiving']}), small (a pipeline check, {MEASURED_WALL['small']}); "
            "--help_all lists each key's values",
            "choices": list(PRESETS),
        },
    )
    seed: int = field(
        default=0, metadata={"help": "seed of the world, the splits, the model and the training"}
    )
    methods: list[str] = field(
        default_factory=lambda: list(DEFAULT_METHODS),
        metadata={
            "help": f"the methods to train, of {list(METHODS)} (default: Table 5's and the fixed-β row)"
        },
    )
    eval_mode: str = field(
        default="likelihood",
        metadata={
            "help": "likelihood (option log-likelihood: what a tiny model can show) | generate (the paper's "
            "protocol: free text, choice extraction; the tiny thinker cannot name the letter it means)",
            "choices": ["likelihood", "generate"],
        },
    )
    eval_limit: int | None = _preset(
        "eval_limit",
        "the first N test items of each task in every evaluation; 0 = all (report captions say N)",
    )
    calibrate_beta: bool = field(
        default=True,
        metadata={
            "help": "train tiny CLAP / CLIP scorers on the world's train clips, score the preference data with "
            "them and let CAVPref and CAVPref w/o Robustness calibrate β = 0.9·ΔS + 0.1; false: no scorers, "
            "--beta for every method"
        },
    )
    beta: float = field(
        default=0.1,
        metadata={
            "help": "the fixed β (β_y, β_V, β_A) of SFT, DPO, CAVPref (fixed β) and, with --calibrate_beta false, "
            "of every method"
        },
    )
    distractors: str = field(
        default="same_group",
        metadata={
            "help": "prep's distractors (docs/data_prep.md): same_group (only answers of the answer's kind: the "
            "ladder's fixed world; on the default run every preference method but CAVPref w/o Robustness gains "
            "paired trust with it, docs/quickstart.md) | category (any answer of the question's category, paper "
            "A.2, prep's own default)",
            "choices": list(DISTRACTORS),
        },
    )
    num_threads: int = field(
        default=1,
        metadata={
            "help": "torch CPU threads of every stage, pinned at the start: the thread count changes the "
            "numbers, and 2 threads on 2 busy cores are slower than 1; 0 leaves torch's own choice "
            "(docs/reproducibility.md)"
        },
    )
    cpu_isa: str = field(
        default="avx2",
        metadata={
            "help": "CPU code of every stage's torch kernels, oneDNN and MKL, pinned at the start: avx2 (the same "
            "bits with and without AVX-512) or native (docs/reproducibility.md)",
            "choices": list(CPU_ISAS),
        },
    )
    dataloader_workers: int = field(
        default=1,
        metadata={
            "help": "data-loader worker processes of every training stage: one worker collates the next batch "
            "on the second core while the 1-thread step runs on the first (the same weights as 0; "
            "docs/reproducibility.md); 0 = collate in the training process"
        },
    )
    # size (preset)
    num_clips: int | None = _preset("num_clips", "clips per source of the run's world")
    caption_clips: int | None = _preset(
        "caption_clips",
        "clips per source of the caption world (another seed, so none is a benchmark clip), whose captions the "
        "captions-only stage trains on",
    )
    hidden_size: int | None = _preset("hidden_size", "thinker width")
    num_hidden_layers: int | None = _preset("num_hidden_layers", "thinker decoder layers")
    num_attention_heads: int | None = _preset("num_attention_heads", "thinker attention heads")
    num_key_value_heads: int | None = _preset(
        "num_key_value_heads", "thinker key / value heads (grouped-query attention)"
    )
    intermediate_size: int | None = _preset("intermediate_size", "thinker MLP width")
    vision_hidden_size: int | None = _preset("vision_hidden_size", "vision tower width")
    vision_depth: int | None = _preset("vision_depth", "vision tower layers")
    audio_d_model: int | None = _preset("audio_d_model", "audio tower width")
    audio_layers: int | None = _preset("audio_layers", "audio tower layers")
    num_frames: int | None = _preset("num_frames", "video frames per clip (training and evaluation)")
    frame_size: int | None = _preset("frame_size", "frame height and width in pixels")
    vocab_size: int | None = _preset("vocab_size", "BPE vocabulary, trained on the world's own text")
    audio_seconds: float | None = _preset(
        "audio_seconds",
        "audio padded to / cut at this many seconds (audio_max_seconds): the world's clip length; the model "
        "I/O's 30-s default would compute 7.5x the log-mel frames",
    )
    batch_size: int | None = _preset("batch_size", "per-device train batch size of every stage")
    # schedule (preset)
    caption_steps: int | None = _preset(
        "caption_steps",
        "steps of the captions-only SFT on the caption world before the starting SFT (the LLaVA-style "
        "alignment stage, where no question's text can stand in for the video or the audio); 0 = none",
    )
    sft_steps: int | None = _preset(
        "sft_steps", "steps of the starting model's mixed SFT (CLEAN's train items + captions)"
    )
    pref_steps: int | None = _preset("pref_steps", "steps of each Table-5 method")
    clap_steps: int | None = _preset("clap_steps", "training steps of the tiny CLAP scorer")
    clip_steps: int | None = _preset("clip_steps", "training steps of the tiny CLIP scorer")
    caption_learning_rate: float | None = _preset(
        "caption_learning_rate", "learning rate of the captions-only stage"
    )
    sft_learning_rate: float | None = _preset(
        "sft_learning_rate", "learning rate of the starting model's mixed SFT"
    )
    pref_learning_rate: float | None = _preset("pref_learning_rate", "learning rate of each Table-5 method")
    # perception (preset): the knobs the lab log adopted for the start that sees and hears
    background_ramp: int | None = _preset(
        "background_ramp",
        "light ramp across both worlds' backgrounds, -N levels at the left edge to +N at the right "
        "(WorldConfig.background_ramp): the only thing in the pixels that says which third of the frame a "
        "token is in (lab log, fifth round)",
    )
    caption_places: str | None = _preset(
        "caption_places",
        "wording of the 'who sounds where' captions: phrase ('Violin on the left': the preposition already "
        "names the middle) or label ('Violin: left'); label lifted 'where' 43.4 -> 69.8 percent (sixth round)",
        choices=list(CAPTION_PLACES),
    )
    caption_see: str | None = _preset(
        "caption_see",
        "wording of the 'what do you see' captions: names ('Violin, Drum') or slots ('left: Violin, middle: "
        "Drum', the column word before each name); slots: three-entity clips 9/29 -> 29/29 (ninth round)",
        choices=list(CAPTION_SEE),
    )
    muted_see: int | None = _preset(
        "muted_see",
        'times the captions-only stage also asks each caption-world clip "what do you see" with the audio '
        "removed (with both streams the names can come from the audio alone; fourth round)",
    )
    blind_hear: int | None = _preset(
        "blind_hear",
        'times the captions-only stage also asks each caption-world clip "what do you hear" with the video '
        "removed (with both streams the start counted the sounds by what it saw; thirteenth round)",
    )
    caption_repeats: int | None = _preset(
        "caption_repeats",
        "times each train clip's three captions appear in the starting model's mixed SFT, next to one copy of "
        "every CircularEval view of CLEAN's train items (4 -> see / hear / where 60 / 75 / 30 percent on the "
        "test clips; 1 -> 36 / 58 / 15; first round)",
    )

    #: ``--help_all``'s sections (``cavpref.parsing.format_help``): every preset-controlled key but eval_limit, and the CPU keys.
    help_groups: ClassVar[dict[str, str]] = {
        **{k: group for group, keys in _GROUPS.items() for k in keys},
        **dict.fromkeys(("num_threads", "cpu_isa", "dataloader_workers"), CPU),
    }

    def world_keys(self) -> dict:
        """The keys both worlds (the run's and the caption world) are drawn with, as ``WorldConfig`` fields."""
        return {k: getattr(self, k) for k in WORLD_KEYS}

    def __post_init__(self):
        if self.preset not in PRESETS:
            raise ValueError(f"--preset must be one of {list(PRESETS)}, got {self.preset!r}")
        for name, value in PRESETS[self.preset].items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        unknown = sorted(set(self.methods) - set(METHODS))
        if unknown:
            raise ValueError(f"--methods: unknown {unknown}; choose from {list(METHODS)}")
        if self.eval_mode not in ("likelihood", "generate"):  # checked now, not after the training stages
            raise ValueError(f"--eval_mode must be likelihood or generate, got {self.eval_mode!r}")
        try:
            check_limit(self.eval_limit)
        except ValueError as e:
            raise ValueError(f"--eval_{e}") from None
        for name in ("dataloader_workers", "muted_see", "blind_hear", "caption_steps"):
            if getattr(self, name) < 0:
                raise ValueError(f"--{name} must be >= 0, got {getattr(self, name)}")
        if self.caption_repeats < 1:
            raise ValueError(f"--caption_repeats must be >= 1, got {self.caption_repeats}")
        try:  # the world keys are WorldConfig's: its own checks, before any stage runs
            WorldConfig(**self.world_keys())
        except ValueError as e:
            raise ValueError(f"a world key (--{' / --'.join(WORLD_KEYS)}): {e}") from None
        if self.caption_places not in CAPTION_PLACES:
            raise ValueError(f"--caption_places must be phrase or label, got {self.caption_places!r}")
        if self.caption_see not in CAPTION_SEE:
            raise ValueError(f"--caption_see must be names or slots, got {self.caption_see!r}")
        if self.caption_steps and self.caption_clips < 1:
            raise ValueError(
                f"--caption_clips must be >= 1 when --caption_steps is set, got {self.caption_clips}"
            )
