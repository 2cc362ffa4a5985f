"""Stream ablations for every benchmark, as MediaSpec operations on the items before the runner sees them.

- ``drop_stream="video"`` / ``"audio"``: the stream is removed (``drop_video`` / ``mute``: absent, not
  black or silent), the audio-only / visual-only rows of TraceAV-Bench's Table 2 and the "does the model
  use this stream at all" check;
- ``text_only``: no media — the question and options alone (the "blindfold" run TraceAV-Bench used to
  filter items answerable without the video);
- masking a time range without removing the stream (black frames, silence) is ``cavpref.media.spec.Mask``;
  TraceAV-Bench's evidence-hop masking builds it from its records (``eval/benchmarks/traceav``).

Because the ablated spec is the item's media, it enters every record key: an ablated run never reuses the
answers of a full one. results.json ``evaluation.input`` says which input a run had, and every report
header prints it: the streams the items' media carry after the ablation (a video-only benchmark's clips,
MMAR's audio only), not the ablation's name alone, which called every unablated run "video + audio".
"""

from __future__ import annotations

from cavpref.media.spec import drop_video, from_json, has_audio, has_video, mute, to_json


def ablate(items: list, *, drop_stream: str | None = None, text_only: bool = False) -> dict:
    """Apply the ablation to ``items`` in place; returns results.json's description of the input."""
    for item in items:
        if not item.media:
            continue
        if text_only:
            item.media = None
        elif drop_stream:  # an item left with no stream at all (MVT without audio) is skipped at decoding
            spec = from_json(item.media)
            item.media = to_json(drop_video(spec) if drop_stream == "video" else mute(spec))
    return {
        "drop_stream": drop_stream,
        "text_only": text_only,
        "streams": streams(items, drop_stream, text_only),
    }


KINDS = ("video + audio", "video only", "audio only", "no media")


def _kind(media: str | None) -> str:
    if not media:
        return "no media"
    spec = from_json(media)
    video, audio = has_video(spec), has_audio(spec)
    return KINDS[0] if video and audio else KINDS[1] if video else KINDS[2] if audio else KINDS[3]


def streams(items: list, drop_stream: str | None, text_only: bool) -> str:
    """The input in words (report headers): what the items carry ("video only"; "video + audio / audio
    only (by item)" where tasks differ, as AVTrustBench's MVT / MAT), and the stream an ablation removed."""
    if text_only:
        return "text only (no video, no audio)"
    present = {_kind(item.media) for item in items}
    kinds = [k for k in KINDS if k in present] or [KINDS[0]]
    notes = (["by item"] if len(kinds) > 1 else []) + ([f"{drop_stream} removed"] if drop_stream else [])
    return " / ".join(kinds) + (f" ({'; '.join(notes)})" if notes else "")
