"""Media layer: lazy MediaSpec trees, decoding with seeks (decord first, PyAV fallback), materialisation."""

from cavpref.media.spec import (  # noqa: F401
    Combine, Concat, MediaError, MediaSpec, Overlay, Source, clip, combine, concat, drop_video, from_dict,
    from_json, has_audio, has_video, mute, overlay, resolve_path, sources, to_dict, to_json,
)
