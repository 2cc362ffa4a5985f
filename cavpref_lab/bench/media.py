"""Benchmark the media layer; prints one table, all figures from one run (compare ratios, not absolutes).

Every figure is the median over interleaved rounds (each method once per round), so load from other
processes on a shared machine hits all methods alike. Decoders run single-threaded (per core).

    python scripts/bench_media.py [--cache_dir DIR] [--repeats N] [--long_rounds N]

Rows:
* 32 uniform frames of a 20-minute video (112x112, 4 fps, GOP 3 s, a scene
  change every 10 s): seeking (PyAV, decord) vs decoding
  every frame and keeping 32 (PyAV, decord) — frames/s counts the 32 delivered frames.
* a typical 10 s clip (320x240, 25 fps, 44.1 kHz audio): 8 frames + 16 kHz audio per sample, one core,
  probe cache cleared each time (every item of a real batch is a new file) — samples/s per backend.
* audio alone for that clip: PyAV seek + resample vs decord's AudioReader (why audio uses PyAV).

The synthetic media are generated once into ``cache_dir`` (default ~/.cache/cavpref/bench_media).
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cavpref.parsing import parse_args


@dataclass
class BenchConfig:
    cache_dir: str = field(
        default=os.path.expanduser("~/.cache/cavpref/bench_media"),
        metadata={"help": "where the generated test videos are kept between runs"},
    )
    repeats: int = field(default=20, metadata={"help": "rounds over the 10 s clip (median reported)"})
    long_rounds: int = field(default=5, metadata={"help": "rounds over the long video (median reported)"})
    long_minutes: float = field(default=20.0, metadata={"help": "length of the generated long video"})


def _frames(n, fps, h, w, period=1):
    """A colour per ``period`` seconds (a scene; x264 puts a keyframe at each change) plus a moving
    gradient, so frames are not trivially compressible."""
    yy, xx = np.mgrid[0:h, 0:w]
    out = np.empty((n, h, w, 3), np.uint8)
    for i in range(n):
        sec = i // (fps * period)
        base = np.array([(sec * 37) % 256, (sec * 91) % 256, (sec * 53) % 256], np.int32)
        ramp = ((xx + yy + 3 * i) % 64).astype(np.int32)
        out[i] = np.clip(base[None, None, :] * 3 // 4 + ramp[..., None], 0, 255)
    return out


def make_media(cfg: BenchConfig) -> tuple[Path, Path]:
    from cavpref.media.write import write_mp4

    d = Path(cfg.cache_dir)
    long_path, clip_path = d / f"long_{cfg.long_minutes:g}min_112_v2.mp4", d / "clip_10s_320x240.mp4"
    if not long_path.exists():
        print(f"generating {long_path} (once) ...", flush=True)
        fps, n = 4, int(cfg.long_minutes * 60 * 4)
        sr = 16000
        audio = (0.3 * np.sin(2 * np.pi * 440 * np.arange(n // fps * sr) / sr)).astype(np.float32)
        write_mp4(long_path.with_suffix(".tmp.mp4"), _frames(n, fps, 112, 112, period=10), fps, audio, sr)
        os.replace(long_path.with_suffix(".tmp.mp4"), long_path)
    if not clip_path.exists():
        sr = 44100
        audio = (0.3 * np.sin(2 * np.pi * 440 * np.arange(10 * sr) / sr)).astype(np.float32)
        write_mp4(clip_path.with_suffix(".tmp.mp4"), _frames(250, 25, 240, 320), 25, audio, sr)
        os.replace(clip_path.with_suffix(".tmp.mp4"), clip_path)
    return long_path, clip_path


def _race(fns: dict, rounds: int) -> dict:
    """Median seconds per call of each function, run interleaved round by round so that load from
    other processes on a shared machine hits every method alike (ratios stay meaningful)."""
    outs = {name: fn() for name, fn in fns.items()}  # warm-up: imports, page cache
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            outs[name] = fn()
            times[name].append(time.perf_counter() - t0)
    return {name: (float(np.median(ts)), outs[name]) for name, ts in times.items()}


def _all_frames_pyav(path, info, times):
    """Baseline: decode every frame in order, keep the one on screen at each target time."""
    import av

    keep, j, last, decoded = [], 0, None, 0
    with av.open(str(path)) as c:
        s = c.streams.video[0]
        s.codec_context.thread_count = 1
        for f in c.decode(s):
            decoded += 1
            t = float(f.time) - info.origin
            while j < len(times) and t > times[j] + 1e-6:
                keep.append(last.to_ndarray(format="rgb24"))
                j += 1
            last = f
        while j < len(times):
            keep.append(last.to_ndarray(format="rgb24"))
            j += 1
    return np.stack(keep), decoded


def _all_frames_decord(path, times):
    from decord import VideoReader, cpu

    vr = VideoReader(str(path), ctx=cpu(0), num_threads=1)
    starts = vr.get_frame_timestamp(np.arange(len(vr)))[:, 0]
    want = set((np.searchsorted(starts, times + 1e-6, side="right") - 1).tolist())
    keep = []
    for i in range(len(vr)):  # sequential reads, no seeking
        frame = vr.next()
        if i in want:
            keep.append(frame.asnumpy())
    return np.stack(keep), len(vr)


def main(argv=None) -> None:
    (cfg,) = parse_args([BenchConfig], sys.argv[1:] if argv is None else argv, prog="scripts/bench_media.py")
    import torch

    torch.set_num_threads(1)
    from cavpref.media import FramePolicy, backends, clip, decode
    from cavpref.media.probe import clear_cache, probe
    from cavpref.media.timeline import frame_times

    long_path, clip_path = make_media(cfg)
    info = probe(long_path)
    times = frame_times(info.duration, 32, None, 32)
    rows = []

    def seek_pyav():
        import av

        with av.open(str(long_path)) as c:
            s = c.streams.video[0]
            s.codec_context.thread_count = 1
            r = backends._SeekingReader(c, s, info)
            frames = [r.frame_at(float(t)).to_ndarray(format="rgb24") for t in times]
        return np.stack(frames), r.decoded

    r = _race(
        {
            "pyav_seek": seek_pyav,
            "decord_seek": lambda: backends._decord_frames(long_path, info, times),
            "pyav_all": lambda: _all_frames_pyav(long_path, info, times),
            "decord_all": lambda: _all_frames_decord(long_path, times),
        },
        cfg.long_rounds,
    )
    (dt_seek_pyav, (f1, n1)), (dt_seek_decord, f2) = r["pyav_seek"], r["decord_seek"]
    (dt_all_pyav, (f3, n3)), (dt_all_decord, (f4, n4)) = r["pyav_all"], r["decord_all"]
    assert f1.shape == f2.shape == f3.shape == f4.shape == (32, 112, 112, 3)
    assert np.abs(f1.astype(int) - f3.astype(int)).max() == 0, "seeking must return the same frames"
    label = f"32 frames of {info.duration / 60:.0f} min 112x112@4fps"
    rows += [
        (label, "PyAV seek", dt_seek_pyav, 32 / dt_seek_pyav, f"{n1} decoded", dt_all_pyav / dt_seek_pyav),
        (
            label,
            "decord seek (get_batch)",
            dt_seek_decord,
            32 / dt_seek_decord,
            "",
            dt_all_pyav / dt_seek_decord,
        ),
        (label, "PyAV decode all", dt_all_pyav, 32 / dt_all_pyav, f"{n3} decoded", 1.0),
        (
            label,
            "decord decode all",
            dt_all_decord,
            32 / dt_all_decord,
            f"{n4} decoded",
            dt_all_pyav / dt_all_decord,
        ),
    ]

    def sample(backend, policy=None, path=clip_path):
        clear_cache()
        return decode(
            clip(path.name), path.parent, frames=policy or FramePolicy(num_frames=8), backend=backend
        )

    # the model I/Os' frame policies through decode() (probe + plan + seek + resize + audio), per backend:
    # the recipes' 8 uniform frames and Qwen2.5-Omni's 2 fps (capped at 32) on the 10 s clip and the long video
    qwen = FramePolicy(num_frames=None, fps=2.0, max_frames=32)
    policies = [
        ("10 s clip, Qwen 2 fps (20 frames) + audio", qwen, clip_path, cfg.repeats),
        (
            f"{cfg.long_minutes:g} min video, 8 frames + audio",
            FramePolicy(num_frames=8),
            long_path,
            cfg.long_rounds,
        ),
        (f"{cfg.long_minutes:g} min video, Qwen 2 fps (32 frames) + audio", qwen, long_path, cfg.long_rounds),
    ]
    for label, policy, path, rounds in policies:
        r = _race(
            {b: (lambda b=b, policy=policy, path=path: sample(b, policy, path)) for b in ("pyav", "decord")},
            rounds,
        )
        assert r["pyav"][1].frames.shape == r["decord"][1].frames.shape
        for backend in ("pyav", "decord"):
            dt = r[backend][0]
            rows.append((label, backend, dt, 1 / dt, "samples/s", r["pyav"][0] / dt))

    cinfo = probe(clip_path)

    def audio_decord():
        from decord import AudioReader, cpu

        return AudioReader(str(clip_path), ctx=cpu(0), sample_rate=16000, mono=True)[:].asnumpy()

    r = _race(
        {
            "pyav": lambda: sample("pyav"),
            "decord": lambda: sample("decord"),
            "audio_pyav": lambda: backends.read_audio(clip_path, cinfo, 0.0, 160000, 16000),
            "audio_decord": audio_decord,
        },
        cfg.repeats,
    )
    for backend in ("pyav", "decord"):
        dt, m = r[backend]
        assert m.frames.shape == (8, 240, 320, 3) and len(m.audio) == 160000
        rows.append(
            ("10 s clip 320x240@25 + audio, 8 frames", backend, dt, 1 / dt, "samples/s", r["pyav"][0] / dt)
        )
    dt_a, dt_ad = r["audio_pyav"][0], r["audio_decord"][0]
    rows.append(("10 s audio @44.1k -> 16k mono", "PyAV (used)", dt_a, 1 / dt_a, "clips/s", 1.0))
    rows.append(
        ("10 s audio @44.1k -> 16k mono", "decord AudioReader", dt_ad, 1 / dt_ad, "clips/s", dt_a / dt_ad)
    )

    head = ("case", "method", "ms/call", "items/s", "note", "speed-up")
    table = [head] + [(c, m, f"{dt * 1e3:.1f}", f"{r:.1f}", n, f"{s:.1f}x") for c, m, dt, r, n, s in rows]
    widths = [max(len(str(r[i])) for r in table) for i in range(len(head))]
    line = lambda r: "| " + " | ".join(str(v).ljust(w) for v, w in zip(r, widths)) + " |"
    print(line(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in table[1:]:
        print(line(r))


if __name__ == "__main__":
    main()
