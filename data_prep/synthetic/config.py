"""The world's knobs: one small dataclass, parsed by ``cavpref.parsing.parse_args`` (flag = YAML key = field name)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from cavpref.output_dir import OutputArguments

from .catalogue import INSTRUMENTS
from .visuals import geometry

WORLD_VERSION = 1
SOURCES = ("music_avqa", "avqa", "audioset")


def _h(text: str, **kw) -> Any:
    return field(metadata={"help": text}, **kw)


@dataclass
class WorldConfig(OutputArguments):
    """Everything that changes the generated files. Same config (``out`` aside) -> same bytes."""

    out: str = _h("output directory (created; a previous world in it is replaced)", default="world")
    seed: int = _h("master seed: every clip, question and id derives from it", default=0)
    num_clips: int = _h("clips per source (MUSIC-AVQA videos, AVQA videos, AudioSet segments)", default=96)
    music_clips: int | None = _h("override num_clips for MUSIC-AVQA", default=None)
    avqa_clips: int | None = _h("override num_clips for AVQA", default=None)
    audioset_clips: int | None = _h("override num_clips for AudioSet", default=None)
    duration: float = _h("seconds per clip", default=4.0)
    width: int = _h("frame width in pixels (even, >= 42)", default=112)
    height: int = _h("frame height in pixels (even, >= 28)", default=112)
    fps: float = _h("video frames per second", default=8.0)
    sample_rate: int = _h("audio sample rate in Hz", default=16000)
    num_instruments: int = _h(f"MUSIC-AVQA instruments in the world (3..{len(INSTRUMENTS)})", default=8)
    questions_per_clip: int = _h("questions asked per MUSIC-AVQA / AVQA clip (at most)", default=8)
    highlight: bool = _h("outline + bob a shape while it sounds (the visual cue of sounding)", default=True)
    background_ramp: int = _h(
        "levels added to the background from -N at the left edge to +N at the right edge (a scene lit from one "
        "side; 0: uniform across the width). A RoPE-only vision tower (Qwen2.5-Omni's) gives a token no "
        "absolute position, so on a uniform background a shape's token looks the same in every slot",
        default=0,
    )
    background_spot: int = _h(
        "levels of red added at the background's centre, falling to 0 at both edges (a spotlight on the "
        "middle; 0: none). The ramp orders the thirds by brightness, the middle between the two others; the "
        "spot makes the middle third the one with the most red",
        default=0,
    )
    shape_scale: float = _h(
        "factor on every shape's half-size (0 < f <= 1; 1: 0.36 x min(width / 3, height))", default=1.0
    )
    slot_spread: float | None = _h(
        "the left / right slot centres' distance from the frame's centre, as a fraction of half the width "
        "(0 < f < 1; unset: the centres of the thirds, 2/3). With a small --shape_scale, 5/6 puts the left / "
        "right shapes against the frame's edges, off the centres of a 3-column token grid",
        default=None,
    )
    level_ratio: float = _h(
        "gain ratio between a performance's consecutive instrument levels (2: 6 dB apart, the quietest of "
        "four 18 dB under the loudest; 1.414: 3 dB, 9 dB in all): how far under a loud instrument a quiet one "
        "plays (measured on the quickstart's start: docs/lab/quickstart_start.md, twelfth round)",
        default=2.0,
    )
    workers: int = _h("processes rendering clips (0: min(4, CPUs)); never changes the output", default=0)

    def __post_init__(self):
        self.validate()

    def validate(self) -> None:
        def bad(name: str, why: str):
            raise ValueError(f"WorldConfig.{name}={getattr(self, name)!r}: {why}")

        for name in ("num_clips", "music_clips", "avqa_clips", "audioset_clips"):
            v = getattr(self, name)
            if v is not None and v < 1:
                bad(name, "must be >= 1")
        if self.width % 2 or self.height % 2 or self.width < 42 or self.height < 28:
            bad(
                "width" if self.width % 2 or self.width < 42 else "height",
                "frames must have even sides, at least 42x28 (three slots of a visible shape)",
            )
        if self.duration < 1.0:
            bad("duration", "must be >= 1.0 s (eight time steps of >= 0.125 s)")
        if self.fps <= 0 or self.fps * self.duration < 1:
            bad("fps", "must be > 0 and give at least one frame per clip")
        if not 8000 <= self.sample_rate <= 48000:
            bad("sample_rate", "must be within 8000..48000 Hz")
        if not 3 <= self.num_instruments <= len(INSTRUMENTS):
            bad("num_instruments", f"must be within 3..{len(INSTRUMENTS)}")
        if self.questions_per_clip < 1:
            bad("questions_per_clip", "must be >= 1")
        if self.workers < 0:
            bad("workers", "must be >= 0")
        if not 0 <= self.background_ramp <= 127:
            bad("background_ramp", "must be within 0..127 levels")
        if not 0 <= self.background_spot <= 127:
            bad("background_spot", "must be within 0..127 levels")
        if not 1 < self.level_ratio <= 4:
            bad("level_ratio", "must be within (1, 4]: every instrument at its own level")
        if not 0 < self.shape_scale <= 1:
            bad("shape_scale", "must be within (0, 1]")
        if self.slot_spread is not None and not 0 < self.slot_spread < 1:
            bad("slot_spread", "must be within (0, 1)")
        r = self.geometry()
        if r["centers_x"][0] - r["radius"] < 0:
            bad("slot_spread", f"puts the left shape (half-size {r['radius']} px) past the frame's edge")

    def clips(self, source: str) -> int:
        override = {"music_avqa": self.music_clips, "avqa": self.avqa_clips, "audioset": self.audioset_clips}
        if source not in override:
            raise KeyError(f"unknown source {source!r} (expected one of {SOURCES})")
        return override[source] if override[source] is not None else self.num_clips

    def geometry(self) -> dict[str, float]:
        """Shape half-size, slot centres and bob of this world's frames (``visuals.geometry``)."""
        return geometry(self.width, self.height, self.shape_scale, self.slot_spread)

    def look(self) -> dict[str, Any]:
        """``visuals.render``'s keywords that draw a frame as this world does (size, outline, light, shapes)."""
        return {
            "width": self.width,
            "height": self.height,
            "highlight": self.highlight,
            "ramp": self.background_ramp,
            "spot": self.background_spot,
            "shape_scale": self.shape_scale,
            "slot_spread": self.slot_spread,
        }

    def knobs(self) -> dict[str, Any]:
        """The config as stored in world.json: without ``out``, ``workers`` and ``overwrite_output_dir``, which do not change the
        world, so the manifest does not depend on where or how fast it was written."""
        d = asdict(self)
        del d["out"], d["workers"], d["overwrite_output_dir"]
        return d
