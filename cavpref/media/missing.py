"""Streams a MediaSpec promises but its files do not have (a clip without an audio track, a video-only or
audio-only file).

Tasks that remove a stream on purpose (MVT drops the video, MAT mutes) say so in their spec; a stream the
spec keeps but the decoded media lacks is a *missing* stream. The decoder returns it as None (never silent
zeros), so the model would quietly be asked without it: evaluation and training count such items per task
(``missing_streams`` in results.json / ``missing_streams.json``), or refuse them with
``missing_stream: error``.
"""

from __future__ import annotations

from typing import Any

from cavpref.media.spec import MediaSpec, from_json, has_audio, has_video, sources

MISSING_STREAM_POLICIES = ("allow", "error")


def missing_streams(spec: MediaSpec | str, decoded: Any, *, video_decoded: bool = True) -> list[str]:
    """'video' / 'audio' for each stream ``spec`` keeps but ``decoded`` lacks (``video_decoded=False``: the
    frames were not asked for, so a missing video is not counted)."""
    if isinstance(spec, str):
        spec = from_json(spec)
    missing = []
    if video_decoded and has_video(spec) and getattr(decoded, "frames", None) is None:
        missing.append("video")
    if has_audio(spec) and getattr(decoded, "audio", None) is None:
        missing.append("audio")
    return missing


def describe_missing(spec: MediaSpec | str, missing: list[str]) -> str:
    """'no audio stream in a.mp4' (the files of the spec named)."""
    if isinstance(spec, str):
        spec = from_json(spec)
    files = sorted({s.path for s in sources(spec)})
    return f"no {' / '.join(missing)} stream in {', '.join(files)}"
