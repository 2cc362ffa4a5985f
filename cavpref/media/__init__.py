"""Media layer: lazy MediaSpec trees, decoding with seeks (decord first, PyAV fallback), materialisation."""

from cavpref.media.decode import DecodedMedia, FramePolicy, decode  # noqa: F401
from cavpref.media.materialize import materialize  # noqa: F401
from cavpref.media.probe import MediaInfo, probe  # noqa: F401
from cavpref.media.spec import (  # noqa: F401
    Combine,
    Concat,
    Mask,
    MediaError,
    MediaSpec,
    Overlay,
    Source,
    Stack,
    clip,
    combine,
    concat,
    drop_video,
    from_dict,
    from_json,
    has_audio,
    has_video,
    mask,
    mute,
    overlay,
    resolve_path,
    shift_audio,
    sources,
    stack,
    to_dict,
    to_json,
)
