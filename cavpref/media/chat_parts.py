"""Decoded media as OpenAI chat content parts: what every OpenAI-compatible endpoint of the project receives.

One encoding for every caller (evaluated endpoints in ``cavpref.eval.backends``, the benchmark builders'
captioners in ``cavpref.data_prep.builders``), so a served model sees the same bytes wherever it is asked:

  - the video as ``{"type": "video_url", "video_url": {"url": "data:video/mp4;base64,..."}}`` — an H.264
    mp4 (no audio track) of exactly the sampled frames, at their sampling rate (``media_format="mp4"``),
    or one ``image_url`` JPEG data URL per frame (``media_format="frames"``);
  - the audio as ``{"type": "input_audio", "input_audio": {"data": <base64 WAV, 16-bit mono>, "format": "wav"}}``;
  - a missing stream is simply not sent.

The encoders are deterministic (``write_mp4``'s fixed x264 settings, PIL's JPEG, PCM WAV), so the same media
give the same request, and a reply cache keyed on the request answers a rerun.
"""

from __future__ import annotations

import base64
import io
import os
import tempfile
from pathlib import Path

import numpy as np

from cavpref.media.decode import DecodedMedia

MEDIA_FORMATS = ("mp4", "frames")


def content_parts(media: DecodedMedia | None, media_format: str = "mp4") -> list[dict]:
    """The video part(s) then the audio part of ``media`` (none for a missing stream or no media)."""
    if media_format not in MEDIA_FORMATS:
        raise ValueError(f"media_format must be one of {MEDIA_FORMATS}, got {media_format!r}")
    content: list[dict] = []
    if media is not None and media.frames is not None:
        if media_format == "mp4":
            content.append({"type": "video_url", "video_url": {"url": mp4_data_url(media)}})
        else:
            content += [{"type": "image_url", "image_url": {"url": jpeg_data_url(f)}} for f in media.frames]
    if media is not None and media.audio is not None:
        content.append({"type": "input_audio", "input_audio": {"data": wav_base64(media), "format": "wav"}})
    return content


def _frame_rate(media: DecodedMedia) -> float:
    t = media.frame_times
    if t is not None and len(t) > 1 and float(t[-1] - t[0]) > 0:
        return (len(t) - 1) / float(t[-1] - t[0])
    return 1.0


def mp4_data_url(media: DecodedMedia) -> str:
    """The decoded frames as an H.264 mp4 (even size, cropped by at most one pixel), base64 data URL."""
    from cavpref.media.write import write_mp4

    frames = media.frames
    h, w = frames.shape[1] - frames.shape[1] % 2, frames.shape[2] - frames.shape[2] % 2
    fd, path = tempfile.mkstemp(suffix=".mp4")
    os.close(fd)
    try:
        write_mp4(path, np.ascontiguousarray(frames[:, :h, :w]), _frame_rate(media))
        data = Path(path).read_bytes()
    finally:
        os.unlink(path)
    return "data:video/mp4;base64," + base64.b64encode(data).decode()


def jpeg_data_url(frame: np.ndarray) -> str:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(frame).save(buf, format="JPEG", quality=90)
    return "data:image/jpeg;base64," + base64.b64encode(buf.getvalue()).decode()


def wav_base64(media: DecodedMedia) -> str:
    import soundfile as sf

    buf = io.BytesIO()
    sf.write(
        buf, np.asarray(media.audio, dtype=np.float32), media.sample_rate, format="WAV", subtype="PCM_16"
    )
    return base64.b64encode(buf.getvalue()).decode()
