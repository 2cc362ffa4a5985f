"""``MediaArguments``: which frames and how much audio a model is fed — declared once for every command.

Training (``cavpref train``), evaluation (``cavpref eval …``) and the dry run read the same fields, so a
recipe key means the same thing everywhere and a model is evaluated on the frames it was trained on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from cavpref.media.decode import FramePolicy


@dataclass
class MediaArguments:
    """Frame sampling and size of the decoded clips (``cavpref.media.decode.FramePolicy``)."""

    num_frames: int | None = field(
        default=8, metadata={"help": "frames sampled uniformly per clip (None: sample by frames_fps)"}
    )
    frames_fps: float | None = field(
        default=None, metadata={"help": "sample at this rate instead of a fixed count (capped by max_frames)"}
    )
    max_frames: int = field(default=32, metadata={"help": "upper bound on frames per clip with frames_fps"})
    frame_height: int | None = field(
        default=None, metadata={"help": "resize decoded frames to this height (set with frame_width)"}
    )
    frame_width: int | None = field(
        default=None, metadata={"help": "resize decoded frames to this width (set with frame_height)"}
    )

    def __post_init__(self):
        if (self.frame_height is None) != (self.frame_width is None):
            raise ValueError(
                f"{type(self).__name__}.frame_height / frame_width: set both or neither "
                f"(got {self.frame_height!r} / {self.frame_width!r})"
            )

    def frame_policy(self) -> FramePolicy:
        size = (self.frame_height, self.frame_width) if self.frame_height is not None else None
        return FramePolicy(
            num_frames=self.num_frames, fps=self.frames_fps, max_frames=self.max_frames, size=size
        )
