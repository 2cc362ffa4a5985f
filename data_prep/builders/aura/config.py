"""Every key of ``cavpref build aura`` (YAML file or ``--key value``; the command line wins)."""

from __future__ import annotations

from dataclasses import dataclass

from cavpref.data_prep.builders.aura.tasks import TASKS
from cavpref.data_prep.builders.endpoints import EndpointArgs, role_model, role_url
from cavpref.data_prep.builders.media import VIDEO_EXTENSIONS
from cavpref.data_prep.builders.work import setting
from cavpref.output_dir import OutputArguments


@dataclass
class AuraConfig(OutputArguments):
    videos: str = setting(
        "folder of the user's videos (read, never written; searched recursively)", default=""
    )
    out: str = setting("build folder: new, empty, or an earlier AURA build to resume (required)", default="")
    tasks: list[str] = setting(  # noqa: RUF009 - setting() is dataclasses.field(metadata=help)
        f"AURA tasks to build, by code: {[t.code for t in TASKS]}",
        default_factory=lambda: [t.code for t in TASKS],
    )
    extensions: list[str] = setting(  # noqa: RUF009 - setting() is dataclasses.field(metadata=help)
        "file name endings taken as videos", default_factory=lambda: list(VIDEO_EXTENSIONS)
    )
    short_clip_s: float = setting(
        "seconds of the CR / UANS clips and of each ID half (paper: 20 s)", default=20.0
    )
    long_clip_s: float = setting(
        "seconds of the TPR / TSA clips and of each PSP performance (paper: 40 s)", default=40.0
    )
    sync_shift_s: float = setting(
        "TSA: how far the sound track of a misaligned clip is shifted (paper: ~5 s)", default=5.0
    )
    stack_gain: float = setting("ID: gain of each half's audio in the split-screen mix", default=0.5)
    id_pairs: str | None = setting(
        "ID: CSV (header top,bottom) or JSONL of video paths under --videos to stack; default: pairs chosen by "
        "the words their visual descriptions share",
        default=None,
    )
    skill_pairs: str | None = setting(
        "PSP: CSV (header novice,expert) or JSONL of video paths under --videos; without it PSP is not built",
        default=None,
    )
    whisper_model: str = setting(
        "speech recogniser for CR / UANS transcripts (HF folder or hub id)", default="openai/whisper-small"
    )
    whisper_device: str = setting("device of the speech recogniser", default="cpu")
    whisper_language: str | None = setting("spoken language (None: Whisper detects it)", default=None)
    caption_max_tokens: int = setting("longest caption a captioner may write", default=512)
    generator_max_tokens: int = setting("longest reply the generator may write", default=2048)
    audit_fraction: float = setting(
        "share of the kept questions of each task exported for human audit", default=0.15
    )
    seed: int = setting(
        "seed of the TSA assignment, the PSP order, option shuffles and the audit sample", default=0
    )

    def __post_init__(self):
        known = {t.code for t in TASKS}
        bad = [t for t in self.tasks if t not in known]
        if bad:
            raise ValueError(f"tasks: unknown AURA task(s) {bad} (choose from {sorted(known)})")
        if self.short_clip_s <= 0 or self.long_clip_s <= 0:
            raise ValueError("short_clip_s and long_clip_s must be positive")
        if self.sync_shift_s == 0:
            raise ValueError("sync_shift_s must not be 0 (a misaligned clip needs a shift)")


@dataclass
class AuraEndpoints(EndpointArgs):
    """The three roles of AURA's pipeline (Fig. 3): the visual and the audio captioner, the QA generator."""

    visual_model: str | None = role_model("dense visual captioner (paper: AuroraCap)")
    visual_base_url: str | None = role_url()
    audio_model: str | None = role_model("audio captioner (paper: FusionAudio)")
    audio_base_url: str | None = role_url()
    generator_model: str | None = role_model("question generator (paper: GPT-4o)")
    generator_base_url: str | None = role_url()
