"""Every knob of ``cavpref quickstart`` (``QuickstartConfig``) and the full / ``--small`` defaults."""

from __future__ import annotations

from dataclasses import dataclass, field

from cavpref.cpu import CPU_ISAS
from cavpref.data_prep.synthetic import WorldConfig
from cavpref.output_dir import OutputArguments

METHODS = ("sft", "dpo", "cavpref_norobust", "cavpref", "cavpref_fixed_beta")
LABELS = {
    "start": "ZS (start)",
    "sft": "SFT",
    "dpo": "DPO",
    "cavpref_norobust": "CAVPref w/o Robustness",
    "cavpref": "CAVPref",
    "cavpref_fixed_beta": "CAVPref (fixed β)",
}
# The `cavpref train` method of each quickstart method (the fixed-β row is CAVPref with β pinned), and the
# methods whose β the trainer calibrates from the scored deltas (with --calibrate_beta, the default).
TRAIN_METHOD = {"cavpref_fixed_beta": "cavpref"}
CALIBRATED = ("cavpref_norobust", "cavpref")
# The keys passed to both worlds' WorldConfig (QuickstartConfig.world_keys).
WORLD_KEYS = ("background_ramp", "background_spot", "shape_scale", "slot_spread", "level_ratio")
# How the "who sounds where" captions word a place (data.clip_captions): "on the left" / "Violin: left" /
# "left: Violin" (by place).
CAPTION_PLACES = ("phrase", "label", "slots")
# How the "what do you see" captions list what is on screen (data.clip_captions): "Violin, Drum" / "left: Violin,
# middle: Drum".
CAPTION_SEE = ("names", "slots")
# How the "what do you hear" captions list what sounds (data.clip_captions): "Violin, Drum" / "0 s: Violin,
# 1.5 s: Drum".
CAPTION_HEAR = ("names", "onsets")


# Full-size defaults and the --small (CI pipeline check) ones, for every field left unset (None).
DEFAULTS = {
    "num_clips": (96, 12),
    "hidden_size": (128, 32),
    "num_hidden_layers": (4, 1),
    "num_attention_heads": (4, 2),
    "num_key_value_heads": (2, 1),
    "intermediate_size": (384, 64),
    "vision_hidden_size": (128, 32),
    "vision_depth": (2, 1),
    "audio_d_model": (64, 32),
    "audio_layers": (2, 1),
    "num_frames": (8, 4),
    "sft_steps": (1000, 6),
    "caption_steps": (2000, 2),
    "caption_clips": (384, 6),
    "pref_steps": (120, 3),
    "eval_limit": (40, 3),
    "clap_steps": (1000, 10),
    "clip_steps": (300, 10),
}


def _default(name: str, what: str) -> str:
    full, small = DEFAULTS[name]
    return f"{what} (default {full}; --small {small})"


@dataclass
class QuickstartConfig(OutputArguments):
    """Every knob of the run. Fields left at None take the full default or, with ``--small``, the CI one
    (``DEFAULTS``): --small checks the pipeline in about a minute, it says nothing about the science."""

    out: str = field(default="runs/quickstart", metadata={"help": "run folder (every stage writes below it)"})
    small: bool = field(
        default=False, metadata={"help": "a one-minute pipeline check (CI): tiny world, few steps"}
    )
    seed: int = field(
        default=0, metadata={"help": "seed of the world, the splits, the model and the training"}
    )
    num_threads: int = field(
        default=1,
        metadata={
            "help": "torch CPU threads of every stage (scorers, training, evaluation), pinned at the start: the "
            "thread count changes the numbers (docs/training.md, 'Same command, same numbers'), and 2 threads "
            "on 2 busy cores are slower than 1; 0 leaves torch's own choice"
        },
    )
    cpu_isa: str = field(
        default="avx2",
        metadata={
            "help": "CPU code of every stage's torch kernels, oneDNN and MKL, pinned at the start: avx2 (the same "
            "bits with and without AVX-512) or native (docs/training.md, 'Same command, same numbers')",
            "choices": list(CPU_ISAS),
        },
    )
    dataloader_workers: int = field(
        default=1,
        metadata={
            "help": "data-loader worker processes of every training stage (dataloader_num_workers, persistent): "
            "one worker decodes and collates the next batch on the second core while the 1-thread step runs "
            "on the first; the weights are bit-identical to 0 workers (collation is deterministic); steps "
            "1.39x faster on a quiet machine and no slower with one competing process (bench_threads: 0.392 vs "
            "0.419 s/step; docs/training.md, 'Same command, same numbers'); 0 = collate in the training process"
        },
    )
    num_clips: int | None = field(default=None, metadata={"help": _default("num_clips", "clips per source")})
    # model
    hidden_size: int | None = field(default=None, metadata={"help": _default("hidden_size", "thinker width")})
    num_hidden_layers: int | None = field(
        default=None, metadata={"help": _default("num_hidden_layers", "thinker decoder layers")}
    )
    num_attention_heads: int | None = field(
        default=None, metadata={"help": _default("num_attention_heads", "thinker attention heads")}
    )
    num_key_value_heads: int | None = field(
        default=None,
        metadata={
            "help": _default("num_key_value_heads", "thinker key / value heads (grouped-query attention)")
        },
    )
    intermediate_size: int | None = field(
        default=None, metadata={"help": _default("intermediate_size", "thinker MLP width")}
    )
    vision_hidden_size: int | None = field(
        default=None, metadata={"help": _default("vision_hidden_size", "vision tower width")}
    )
    vision_depth: int | None = field(
        default=None, metadata={"help": _default("vision_depth", "vision tower layers")}
    )
    audio_d_model: int | None = field(
        default=None, metadata={"help": _default("audio_d_model", "audio tower width")}
    )
    audio_layers: int | None = field(
        default=None, metadata={"help": _default("audio_layers", "audio tower layers")}
    )
    rope_theta: float = field(
        default=10000.0,
        metadata={
            "help": "rotary base of the thinker's M-RoPE; the (time, height, width) sections take the highest, "
            "middle and lowest of the head's frequencies, so with a 32-wide head and base 10000 one video "
            "token column turns the width frequencies by at most 0.003 rad"
        },
    )
    vocab_size: int = field(
        default=1500, metadata={"help": "BPE vocabulary, trained on the world's own text"}
    )
    num_frames: int | None = field(
        default=None,
        metadata={"help": _default("num_frames", "video frames per clip (training and evaluation)")},
    )
    frame_size: int = field(default=56, metadata={"help": "frame height (and width) in pixels"})
    background_ramp: int = field(
        default=0,
        metadata={
            "help": "light ramp across both worlds' backgrounds, -N levels at the left edge to +N at the right "
            "(WorldConfig.background_ramp; 0: uniform, as before): the only thing in the pixels that says "
            "which third of the frame a token is in, when a shape sits centred in its own token (84 px). "
            "Measured at 84 px: 100 -> 'see' 62-70 to 90.6 percent at the start; 40 is flattened by training "
            "(docs/quickstart_start.md, fifth round)"
        },
    )
    background_spot: int = field(
        default=0,
        metadata={
            "help": "red spotlight on both worlds' backgrounds, +N at the centre falling to 0 at both edges "
            "(WorldConfig.background_spot; 0: none). With the ramp alone the middle third is the one between "
            "the two others in brightness; the spot makes it the reddest. Measured with ramp 100 at 84 px: 'where' "
            "43.4 -> 26.4 percent, the slot word at chance (docs/quickstart_start.md, sixth round)"
        },
    )
    shape_scale: float = field(
        default=1.0,
        metadata={
            "help": "factor on every shape's half-size in both worlds (WorldConfig.shape_scale; 1: as before)"
        },
    )
    slot_spread: float | None = field(
        default=None,
        metadata={
            "help": "the left / right slots' distance from the frame's centre, as a fraction of half the width, "
            "in both worlds (WorldConfig.slot_spread; unset: the thirds' centres). With --shape_scale 0.7 and "
            "5/6, at 84 px each shape sits in its own 28-px video token at a different place inside it. Measured: "
            "'where' 34.0 percent, 'see' 62.3 (docs/quickstart_start.md, sixth round)"
        },
    )
    frame_width: int | None = field(
        default=None,
        metadata={
            "help": "frame width in pixels; unset = frame_size. A width of 112 at height 84 puts the three "
            "slots at three different places inside the 28-px video tokens (docs/quickstart_start.md)"
        },
    )
    audio_seconds: float = field(
        default=4.0,
        metadata={
            "help": "audio padded to / cut at this many seconds in training and evaluation (audio_max_seconds): "
            "the world's clip length; the model I/O's 30-s default would compute 7.5x the log-mel frames"
        },
    )
    # training
    sft_steps: int | None = field(
        default=None, metadata={"help": _default("sft_steps", "steps of the starting model's SFT")}
    )
    caption_steps: int | None = field(
        default=None,
        metadata={
            "help": _default(
                "caption_steps",
                "steps of a captions-only SFT (stage start_captions) before the starting SFT, which then "
                "trains from it: the LLaVA-style alignment stage, where no question's text prior can stand in "
                "for the video or the audio; 0 = none",
            )
        },
    )
    caption_clips: int | None = field(
        default=None,
        metadata={
            "help": _default(
                "caption_clips",
                "clips per source of the caption world (another seed than the run's world, so none of its "
                "clips is a benchmark clip), whose captions the captions-only stage trains on",
            )
        },
    )
    muted_see: int = field(
        default=0,
        metadata={
            "help": 'times the captions-only stage also asks each caption-world clip "what do you see" with '
            "the audio removed (modality dropout): with both streams the names can come from the audio alone "
            "(measured: the start named what it heard, docs/quickstart_start.md); 0 = none"
        },
    )
    blind_hear: int = field(
        default=0,
        metadata={
            "help": 'times the captions-only stage also asks each caption-world clip "what do you hear" with '
            "the video removed (modality dropout, as --muted_see for the audio): with both streams the start "
            "counts the sounds by what it sees (measured: 8 of 13 wrong answers named as many sounds as there "
            "were entities on screen, docs/quickstart_start.md); 0 = none"
        },
    )
    sft_blind_hear: int = field(
        default=0,
        metadata={
            "help": 'times the start\'s mixed SFT also asks each train clip "what do you hear" with the video '
            "removed (--blind_hear's rows, for the run's own train clips): without them the mixed SFT, which "
            "sees both streams only, can undo what the captions stage learnt without the video (measured: "
            "docs/quickstart_start.md, thirteenth round); 0 = none"
        },
    )
    caption_grounding: int = field(
        default=0,
        metadata={
            "help": "times the captions-only stage also asks each caption-world clip its one-entity questions "
            "(what is at each slot, which object makes the k-th sound and where: data.clip_grounding, the rows "
            "the starting SFT has for its train clips); 0 = none. Measured: 1 dilutes the list captions (11,372 "
            "rows instead of 4,608) and did not help (docs/quickstart_start.md, fifth round)"
        },
    )
    caption_places: str = field(
        default="phrase",
        metadata={
            "help": "wording of the places in the 'who sounds where' captions: phrase ('Violin on the left, Drum "
            "in the middle': the preposition already names the middle) or label ('Violin: left, Drum: "
            "middle'), both in order of onset, or slots ('left: Violin, middle: Drum, off screen: Bass drum': by "
            "place, left to right then off screen, the place word before each name). Measured at 84 x 56 px: the "
            "preposition was chosen without the video; label: 'where' 43.4 -> 69.8 percent "
            "(docs/quickstart_start.md, sixth round)",
            "choices": list(CAPTION_PLACES),
        },
    )
    caption_see: str = field(
        default="names",
        metadata={
            "help": "wording of the 'what do you see' captions: names ('Violin, Drum', left to right) or slots "
            "('left: Violin, middle: Drum': each name follows the word that says which column of the frame "
            "holds it, where a names-only list must first find again where the last name it wrote is). "
            "Measured at 256 wide: three-entity clips 9/29 -> 29/29 after the captions stage (seeds 0-2), "
            "'see' 94.7-100 percent on four seeds (docs/quickstart_start.md, ninth round)",
            "choices": list(CAPTION_SEE),
        },
    )
    caption_hear: str = field(
        default="names",
        metadata={
            "help": "wording of the 'what do you hear' captions: names ('Violin, Drum', in order of onset) or "
            "onsets ('0 s: Violin, 1.5 s: Drum': each name after the second its first sound starts at, as the "
            "column word anchors a name in the frame). Measured: docs/quickstart_start.md, twelfth round",
            "choices": list(CAPTION_HEAR),
        },
    )
    pref_steps: int | None = field(
        default=None, metadata={"help": _default("pref_steps", "steps of each Table-5 method")}
    )
    batch_size: int = field(default=8, metadata={"help": "per-device train batch size of every stage"})
    caption_repeats: int = field(
        default=4,
        metadata={
            "help": "times each train clip's captions (see / hear / who sounds where) appear in the starting "
            "model's SFT data, next to one copy of every CircularEval view of CLEAN's train items (default "
            "size, 2000 SFT steps, test clips: 4 -> see / hear / where 60 / 75 / 30 percent; 1 -> 36 / 58 / 15 "
            "percent; "
            "docs/quickstart_start.md)"
        },
    )
    grounding_repeats: int = field(
        default=0,
        metadata={
            "help": "times each train clip's one-entity questions (what is on the left / in the middle / on the "
            "right, which object makes the k-th sound and where: quickstart.data.clip_grounding) appear in the "
            "starting SFT data; 0 = none"
        },
    )
    sft_learning_rate: float = field(
        default=5e-4, metadata={"help": "learning rate of the starting model's SFT"}
    )
    caption_learning_rate: float | None = field(
        default=None,
        metadata={
            "help": "learning rate of the captions-only stage (start_captions); unset = sft_learning_rate"
        },
    )
    sft_encoder_learning_rate: float | None = field(
        default=None,
        metadata={
            "help": "learning rate of the towers and projectors in the starting SFT (encoder_learning_rate); "
            "unset = sft_learning_rate"
        },
    )
    pref_learning_rate: float = field(default=2e-4, metadata={"help": "learning rate of each Table-5 method"})
    beta: float = field(
        default=0.1,
        metadata={
            "help": "the fixed β (β_y, β_V, β_A) of SFT, DPO, CAVPref (fixed β) and, with --calibrate_beta false, "
            "of every method"
        },
    )
    calibrate_beta: bool = field(
        default=True,
        metadata={
            "help": "train tiny CLAP / CLIP scorers on the world's train clips, score the preference data with "
            "them (prep score: true) and let CAVPref and CAVPref w/o Robustness calibrate β = 0.9·ΔS + 0.1; "
            "false: no scorers, β fixed for every method (see the package doc)"
        },
    )
    clap_steps: int | None = field(
        default=None, metadata={"help": _default("clap_steps", "training steps of the tiny CLAP scorer")}
    )
    clip_steps: int | None = field(
        default=None, metadata={"help": _default("clip_steps", "training steps of the tiny CLIP scorer")}
    )
    methods: list[str] = field(
        default_factory=lambda: list(METHODS),
        metadata={"help": f"the Table-5 methods to train, of {list(METHODS)}"},
    )
    # evaluation
    eval_limit: int | None = field(
        default=None, metadata={"help": _default("eval_limit", "items per task and setting") + "; 0 = all"}
    )
    eval_mode: str = field(
        default="likelihood",
        metadata={
            "help": "likelihood (option log-likelihood) | generate "
            "(the paper's protocol; see the package doc)"
        },
    )

    level_ratio: float = field(
        default=2.0,
        metadata={
            "help": "gain ratio between the consecutive levels of a performance's instruments in both worlds "
            "(WorldConfig.level_ratio; 2: 6 dB apart, 18 dB from the quietest to the loudest, as before). "
            "Measured: docs/quickstart_start.md, twelfth round"
        },
    )

    @property
    def width(self) -> int:
        """The frame width in pixels (``frame_width``, else ``frame_size``)."""
        return self.frame_width or self.frame_size

    def world_keys(self) -> dict:
        """The keys both worlds (the run's and the caption world) are drawn with, as ``WorldConfig`` fields."""
        return {k: getattr(self, k) for k in WORLD_KEYS}

    def __post_init__(self):
        unknown = sorted(set(self.methods) - set(METHODS))
        if unknown:
            raise ValueError(f"--methods: unknown {unknown}; choose from {list(METHODS)}")
        if self.dataloader_workers < 0:
            raise ValueError(f"--dataloader_workers must be >= 0, got {self.dataloader_workers}")
        if self.grounding_repeats < 0:
            raise ValueError(f"--grounding_repeats must be >= 0, got {self.grounding_repeats}")
        if self.caption_repeats < 1:
            raise ValueError(f"--caption_repeats must be >= 1, got {self.caption_repeats}")
        if self.eval_mode not in ("likelihood", "generate"):  # checked now, not after the training stages
            raise ValueError(f"--eval_mode must be likelihood or generate, got {self.eval_mode!r}")
        for name, (full, small) in DEFAULTS.items():
            if getattr(self, name) is None:
                setattr(self, name, small if self.small else full)
        if self.muted_see < 0:
            raise ValueError(f"--muted_see must be >= 0, got {self.muted_see}")
        if self.blind_hear < 0:
            raise ValueError(f"--blind_hear must be >= 0, got {self.blind_hear}")
        if self.sft_blind_hear < 0:
            raise ValueError(f"--sft_blind_hear must be >= 0, got {self.sft_blind_hear}")
        if self.caption_grounding < 0:
            raise ValueError(f"--caption_grounding must be >= 0, got {self.caption_grounding}")
        try:  # the world keys are WorldConfig's: its own checks, before any stage runs
            WorldConfig(**self.world_keys())
        except ValueError as e:
            raise ValueError(f"a world key (--{' / --'.join(WORLD_KEYS)}): {e}") from None
        if self.caption_places not in CAPTION_PLACES:
            raise ValueError(f"--caption_places must be phrase, label or slots, got {self.caption_places!r}")
        if self.caption_see not in CAPTION_SEE:
            raise ValueError(f"--caption_see must be names or slots, got {self.caption_see!r}")
        if self.caption_hear not in CAPTION_HEAR:
            raise ValueError(f"--caption_hear must be names or onsets, got {self.caption_hear!r}")
        if self.caption_steps < 0:
            raise ValueError(f"--caption_steps must be >= 0, got {self.caption_steps}")
        if self.caption_steps and self.caption_clips < 1:
            raise ValueError(
                f"--caption_clips must be >= 1 when --caption_steps is set, got {self.caption_clips}"
            )
