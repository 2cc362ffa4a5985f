"""Read frames at given times and audio ranges from one file: PyAV (default) or decord (video only).

Why PyAV is the default (``auto``): measured with ``scripts/bench_media.py`` (table in docs/media.md), PyAV's
seeks beat decord's on long videos and decord is no faster on 10-s clips, under the frame policies the model
I/Os use; decord stays selectable with ``backend="decord"``.

Both readers seek, so 32 frames of an hour-long video cost 32 short GOP decodes, not the hour.

Why audio is always PyAV: decord 0.6's ``AudioReader`` returns wrong samples for multi-channel
sources (a stereo AAC test tone downmixed with ``mono=True`` correlates at -0.3 with the true mix, and
``mono=False`` at 16 kHz yields NaNs), and it decodes the whole track when opened. PyAV seeks to the
range and resamples with libswresample (``AudioResampler``), which is exact for mono and stereo.

Why frames are resized by the caller, not here: decord 0.6's own ``width=/height=`` resize fails for
some sizes (``96x64 -> 48x32`` raises a size-mismatch error), and one shared resize keeps the two
backends' outputs comparable.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from cavpref.media.probe import MediaInfo
from cavpref.media.spec import MediaError

log = logging.getLogger(__name__)

BACKENDS = ("auto", "decord", "pyav")
EPS = 1e-6  # seconds; frame pts equal to a sample time (within float error) is that frame
AUDIO_PREROLL = 0.2  # seconds decoded before an audio range after a seek (AAC needs warm-up)
_decord_state: dict[str, object] = {}


def decord_available() -> bool:
    """True when decord imports; logs the reason once when it does not."""
    if "ok" not in _decord_state:
        try:
            import decord  # noqa: F401

            _decord_state["ok"] = True
        except Exception as err:  # noqa: BLE001 - a missing wheel (non-x86_64) or a broken shared library
            _decord_state["ok"] = False
            log.warning("decord is unavailable (%s)", err)
    return bool(_decord_state["ok"])


def resolve_backend(backend: str) -> str:
    """``auto`` → PyAV (the faster by measurement, see docs/media.md); ``decord`` must import or is refused."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend in ("auto", "pyav"):
        return "pyav"
    if decord_available():
        return "decord"
    raise MediaError("backend='decord' was requested but decord cannot be imported")


def read_frames(path: Path, info: MediaInfo, times: np.ndarray, backend: str = "auto") -> np.ndarray:
    """RGB frames (n, H, W, 3) uint8 at native size: for each local time, the frame on screen then."""
    times = np.asarray(times, dtype=np.float64)
    if resolve_backend(backend) == "decord":
        try:
            return _decord_frames(path, info, times)
        except Exception as err:  # noqa: BLE001 - any decord failure is reported naming the file
            raise MediaError(f"{path}: decord failed to decode video ({err})") from None
    return _pyav_frames(path, info, times)


def _decord_frames(path, info, times):
    from decord import VideoReader, cpu

    vr = VideoReader(str(path), ctx=cpu(0), num_threads=1)
    n = len(vr)
    if n == 0:
        raise MediaError(f"{path}: video stream has no frames")
    starts = vr.get_frame_timestamp(np.arange(n))[:, 0] + info.video_start
    idx = np.clip(np.searchsorted(starts, times + EPS, side="right") - 1, 0, n - 1)
    uniq, inverse = np.unique(idx, return_inverse=True)
    batch = vr.get_batch(uniq.tolist()).asnumpy()
    return batch[inverse]


def _pyav_frames(path, info, times):
    import av

    order = np.argsort(times, kind="stable")
    out: list[np.ndarray | None] = [None] * len(times)
    try:
        with av.open(str(path)) as container:
            stream = container.streams.video[0]
            stream.codec_context.thread_count = 1
            reader = _SeekingReader(container, stream, info)
            prev, prev_rgb = None, None
            for i in order:
                frame = reader.frame_at(float(times[i]))
                if frame is not prev:  # several sample times can fall on one frame: convert it once
                    prev, prev_rgb = frame, frame.to_ndarray(format="rgb24")
                out[i] = prev_rgb
    except av.error.FFmpegError as err:
        raise MediaError(f"{path}: cannot decode video ({err})") from None
    return np.stack(out)


class _SeekingReader:
    """Frames at increasing times: decode forward while the next target is within about one GOP,
    seek (to the keyframe before the target) when it is further — the GOP length is learned from the
    keyframes seen."""

    def __init__(self, container, stream, info: MediaInfo):
        self.container, self.stream, self.info = container, stream, info
        self.gen = None
        self.last = self.peek = None  # last frame at or before the target; first frame after it
        self.eof = False
        self.gop = 1.0  # seconds; grows to the longest keyframe interval seen in one decoding run
        self.run_key: float | None = None  # last keyframe decoded since the last seek
        self.decoded = self.seeks = 0  # counters: the benchmark and tests check that seeking pays

    def _t(self, frame) -> float:
        return float(frame.time) - self.info.origin

    def _gop(self, cur: float) -> float:
        # the current GOP is at least as long as the stretch decoded since its keyframe
        return max(self.gop, cur - self.run_key) if self.run_key is not None else self.gop

    def _seek(self, t: float) -> None:
        target = max(0.0, t + self.info.origin)
        self.container.seek(
            math.floor(target / self.stream.time_base), stream=self.stream, backward=True, any_frame=False
        )
        self.gen = self.container.decode(self.stream)
        self.seeks += 1
        self.run_key = None
        self.last = self.peek = None
        self.eof = False

    def _advance(self, t: float) -> None:
        while not self.eof:
            if self.peek is None:
                self.peek = next(self.gen, None)
                if self.peek is None:
                    self.eof = True
                    break
                self.decoded += 1
                if self.peek.time is None:  # no pts: cannot place it on the timeline
                    self.peek = None
                    continue
                if self.peek.key_frame:
                    tk = self._t(self.peek)
                    if self.run_key is not None:
                        self.gop = max(self.gop, tk - self.run_key)
                    self.run_key = tk
            if self._t(self.peek) <= t + EPS:
                self.last, self.peek = self.peek, None
            else:
                break

    def frame_at(self, t: float):
        cur = None
        if self.peek is not None:
            cur = self._t(self.peek)
        elif self.last is not None:
            cur = self._t(self.last)
        if self.gen is None or (not self.eof and cur is not None and t - cur > self._gop(cur)):
            self._seek(t)
        self._advance(t)
        back = 1.0
        # A seek can land after the target (sparse or odd index): step back until it does not.
        while self.last is None and t > self.info.video_start + EPS and back < 2 * (t + 1):
            self._seek(t - back)
            self._advance(t)
            back *= 2
        frame = self.last if self.last is not None else self.peek
        if frame is None:
            raise MediaError(f"{self.info.path}: no decodable video frame at {t:.3f} s")
        return frame


def read_audio(path: Path, info: MediaInfo, start: float, num_samples: int, sample_rate: int) -> np.ndarray:
    """``num_samples`` mono float32 samples at ``sample_rate`` from local time ``start`` (PyAV).

    Samples outside the audio stream (before its first or after its last packet) are zeros.
    """
    import av

    out = np.zeros(num_samples, dtype=np.float32)
    if num_samples <= 0:
        return out
    chunks, got, t0 = [], 0, None
    end = start + num_samples / sample_rate
    try:
        with av.open(str(path)) as container:
            stream = container.streams.audio[0]
            if start - AUDIO_PREROLL > 0:
                container.seek(
                    int((start - AUDIO_PREROLL + info.origin) / stream.time_base),
                    stream=stream,
                    backward=True,
                    any_frame=False,
                )
            resampler = av.AudioResampler(format="flt", layout="mono", rate=sample_rate)
            for frame in container.decode(stream):
                if t0 is None:
                    t0 = info.audio_start if frame.time is None else float(frame.time) - info.origin
                for r in resampler.resample(frame):
                    chunks.append(r.to_ndarray().reshape(-1))
                    got += chunks[-1].size
                if t0 + got / sample_rate >= end + 0.05:
                    break
            for r in resampler.resample(None):
                chunks.append(r.to_ndarray().reshape(-1))
    except av.error.FFmpegError as err:
        raise MediaError(f"{path}: cannot decode audio ({err})") from None
    if not chunks:
        return out
    y = np.concatenate(chunks).astype(np.float32, copy=False)
    offset = round((start - t0) * sample_rate)
    if offset >= 0:
        seg = y[offset : offset + num_samples]
        out[: seg.size] = seg
    else:
        seg = y[: max(0, num_samples + offset)]
        out[-offset : -offset + seg.size] = seg
    return out
