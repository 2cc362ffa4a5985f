"""Benchmark the similarity scorers (data_prep/scoring) on the tiny offline models; prints one table.

All figures come from one run (compare ratios, not absolutes): each row is the median over interleaved
rounds, every round using a fresh in-memory cache, so load from other processes hits all rows alike.

    python scripts/bench_scoring.py [--items N] [--rounds R] [--batch_size B] [--threads T]

Section "scorers" (owner: scoring). Rows, in scores/s (one score = one media item, or one item-text
pair for CLAP / CLIP):
* CLAP audio–text, CLIP video–text, AVSM text bridge (CLIP×CLAP), AVSM direct (Perception Encoder AV,
  only when ``timm`` is installed) — cold cache, batch ``B``;
* CLAP with batch 1 (what batching buys);
* AVSM text bridge again on the same items (warm in-memory cache: only the vocabulary maths remain).
Media are generated in memory (1 s of audio at 8 kHz, 8 frames of 64x64) so decoding is not measured
here (see scripts/bench_media.py).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cavpref.parsing import parse_args


@dataclass
class BenchConfig:
    items: int = field(default=64, metadata={"help": "media items scored per round"})
    rounds: int = field(default=3, metadata={"help": "timed rounds (median reported)"})
    batch_size: int = field(default=16, metadata={"help": "items per scorer batch"})
    threads: int = field(
        default=1, metadata={"help": "torch intra-op threads: 1 keeps figures comparable on a shared machine"}
    )


def _media(n: int, seed: int = 0):
    from cavpref.data_prep.scoring import KeyedMedia
    from cavpref.media.decode import DecodedMedia

    rng = np.random.default_rng(seed)
    return [
        KeyedMedia(
            f"bench-{i}",
            DecodedMedia(
                rng.integers(0, 256, (8, 64, 64, 3), dtype=np.uint8),
                None,
                (0.1 * rng.standard_normal(8000)).astype(np.float32),
                8000,
                1.0,
            ),
        )
        for i in range(n)
    ]


def main(argv=None) -> None:
    import torch

    (cfg,) = parse_args(
        [BenchConfig], sys.argv[1:] if argv is None else argv, prog="scripts/bench_scoring.py"
    )
    torch.set_num_threads(cfg.threads)
    with tempfile.TemporaryDirectory(prefix="bench_scoring_") as tmp:
        run_bench(cfg, Path(tmp))


def run_bench(cfg: BenchConfig, tmp: Path) -> None:
    from cavpref.data_prep.scoring import Scorers, ScoringConfig
    from cavpref.data_prep.scoring.tiny import save_tiny_clap, save_tiny_clip, save_tiny_pe_audio_video

    clap, clip = str(save_tiny_clap(tmp / "clap")), str(save_tiny_clip(tmp / "clip"))
    try:
        import timm  # noqa: F401

        pe = str(save_tiny_pe_audio_video(tmp / "pe"))
    except ImportError:
        pe = None
    media, vocab = _media(cfg.items), ["dog", "piano", "rain", "speech", "engine", "violin", "bird", "car"]
    texts = [vocab[i % len(vocab)] for i in range(cfg.items)]

    def loaded(batch_size: int, **kw) -> Scorers:
        """Fresh scorers (empty cache) with their models already loaded, so loading is not timed."""
        s = Scorers(
            ScoringConfig(clap_model=clap, clip_model=clip, batch_size=batch_size, progress=False, **kw)
        )
        _ = s.avsm if kw else (s.clap, s.clip)
        return s

    def row(call, batch_size: int = cfg.batch_size, warm: bool = False, **kw):
        """A factory of timed calls: each gets fresh scorers, warmed (cache filled) when asked."""

        def make():
            s = loaded(batch_size, **kw)
            if warm:
                call(s)
            return lambda: call(s)

        return make

    rows = {
        "CLAP audio-text": row(lambda s: s.clap.score(media, texts)),
        "CLAP audio-text, batch 1": row(lambda s: s.clap.score(media, texts), batch_size=1),
        "CLIP video-text (8 frames)": row(lambda s: s.clip.score(media, texts)),
        "AVSM text bridge (CLIP x CLAP)": row(lambda s: s.avsm.score(media, vocab)),
        "AVSM text bridge, warm cache": row(lambda s: s.avsm.score(media, vocab), warm=True),
    }
    if pe is not None:
        rows["AVSM direct (PE audio-video)"] = row(
            lambda s: s.avsm.score(media), avsm_backend="pe_audio_video", av_model=pe
        )
    for make in rows.values():  # warm-up: model loading, first-call allocations
        make()()
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(cfg.rounds):
        for name, make in rows.items():
            run = make()  # fresh scorers = cold cache (models load outside the timing)
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)

    head = ("scorer (tiny models, CPU)", "scores/s", "x CLAP")
    base = cfg.items / statistics.median(times["CLAP audio-text"])
    body = []
    for name, ts in times.items():
        rate = cfg.items / statistics.median(ts)
        body.append((name, f"{rate:,.0f}", f"{rate / base:.2f}"))
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(3)]

    def line(r):
        return "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"

    print(
        f"{cfg.items} items, batch {cfg.batch_size}, median of {cfg.rounds} rounds, torch threads: "
        f"{__import__('torch').get_num_threads()}"
    )
    print(line(head))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in body:
        print(line(r))
    if pe is None:
        print("(AVSM direct skipped: timm is not installed)")


if __name__ == "__main__":
    main()
