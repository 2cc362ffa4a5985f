"""Every key of ``cavpref build traceav`` (YAML file or ``--key value``; the command line wins)."""

from __future__ import annotations

from dataclasses import dataclass

from cavpref.data_prep.builders.endpoints import EndpointArgs, role_model, role_url
from cavpref.data_prep.builders.traceav.tasks import TASKS
from cavpref.data_prep.builders.work import setting
from cavpref.output_dir import OutputArguments


@dataclass
class TraceConfig(OutputArguments):
    videos: str = setting(
        "folder of the user's videos, *.mp4 (searched recursively); it is the --media_root of `cavpref eval "
        "traceav` (read, never written)",
        default="",
    )
    out: str = setting(
        "build folder: new, empty, or an earlier TraceAV build to resume (required)", default=""
    )
    tasks: list[str] = setting(  # noqa: RUF009 - setting() is dataclasses.field(metadata=help)
        "sub-tasks to build (released task_type names)", default_factory=lambda: [t.task_type for t in TASKS]
    )
    min_duration_s: float = setting(
        "collection: shorter videos are dropped (paper: longer than 10 min)", default=600.0
    )
    min_transitions: int = setting(
        "collection: videos with fewer scene transitions are dropped (paper: 3)", default=3
    )
    scene_threshold: float = setting(
        "mean absolute difference (0-255) between sampled frames that counts as a scene change", default=30.0
    )
    scene_fps: float = setting(
        "frames per second sampled for scene changes and the content signature", default=1.0
    )
    min_volume_db: float = setting(
        "collection: videos whose mean volume is lower are dropped (paper: -50 dB)", default=-50.0
    )
    segment_s: float = setting(
        "seconds per captioned segment (paper: 1 minute; timestamps in the output count segments, so keep 60 "
        "for minutes as released)",
        default=60.0,
    )
    min_hops: int = setting(
        "trajectory filter: fewest events in a trajectory (released default 2)", default=2
    )
    max_hops: int = setting(
        "trajectory filter: most events in a trajectory (released default 10)", default=10
    )
    min_span: int = setting(
        "trajectory filter: event ids a trajectory must span, the paper's delta (released default 2)",
        default=2,
    )
    max_candidates: int = setting(
        "trajectories the proposer may return per video and task (released default 10)", default=10
    )
    questions_per_video: int = setting(
        "questions per video and task, from the first surviving trajectories (released default 1)", default=1
    )
    short_hop_max: int = setting(
        "hop_length_label 'short' up to this many minutes of hops (released default 3)", default=3
    )
    medium_hop_max: int = setting(
        "hop_length_label 'medium' up to this many minutes (released default 6); longer: 'long'", default=6
    )
    caption_max_tokens: int = setting("longest reply of the captioning and fusion roles", default=2048)
    agent_max_tokens: int = setting(
        "longest reply of the segmentation, proposal, question, verifier and blindfold calls", default=4096
    )
    audit_fraction: float = setting(
        "share of each batch (a sub-task of this build) exported for human audit (paper: 15 %)", default=0.15
    )
    seed: int = setting("seed of the option permutations and the audit sample", default=0)

    def __post_init__(self):
        known = {t.task_type for t in TASKS}
        bad = [t for t in self.tasks if t not in known]
        if bad:
            raise ValueError(f"tasks: unknown TraceAV-Bench sub-task(s) {bad} (choose from {sorted(known)})")
        if self.segment_s < 1:
            raise ValueError(f"segment_s must be at least 1 s, got {self.segment_s}")
        if not 1 <= self.min_hops <= self.max_hops:
            raise ValueError(f"need 1 <= min_hops <= max_hops, got {self.min_hops}, {self.max_hops}")


@dataclass
class TraceEndpoints(EndpointArgs):
    """The five roles of TraceAV-Bench's pipeline (Sec. 3.3-3.4)."""

    visual_model: str | None = role_model(
        "per-segment visual captioner with the entity cache (paper: Qwen3-VL-32B)"
    )
    visual_base_url: str | None = role_url()
    fusion_model: str | None = role_model(
        "audio-visual fusion model that listens to each segment (paper: Gemini-2.5-Flash)"
    )
    fusion_base_url: str | None = role_url()
    generator_model: str | None = role_model(
        "event segmentation, trajectory proposal and question agents (paper: GPT-5.1)"
    )
    generator_base_url: str | None = role_url()
    verifier_model: str | None = role_model("logical verifier of each question (paper: a separate LLM)")
    verifier_base_url: str | None = role_url()
    blindfold_model: str | None = role_model("text-only blindfold solver (paper: Gemini 2 Flash)")
    blindfold_base_url: str | None = role_url()
