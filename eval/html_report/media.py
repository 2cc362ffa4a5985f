"""The HTML report's media: per item a strip of a few frames the model saw (JPEG) and a short clip of what it
heard (AAC in mp4), written next to the page within a size budget.

Each item is decoded as the run decoded it — the benchmark's own decoding where it has one (TraceAV-Bench's
long-video sampling, a benchmark's bounded clips), else ``cavpref.media.decode`` with the run's frame policy and sample
rate — so the strip shows frames the model received and the clip is the audio it heard (overlays mixed,
masks silent, a dropped stream absent). ``thumbnail_frames`` of the decoded frames, evenly spread, are
scaled to ``thumbnail_height`` pixels and joined into one image; the first ``audio_clip_seconds`` of the
audio are encoded by ``cavpref.media.write.write_mp4`` at 24 kbit/s.

Files are named by a hash of (media spec, media root, decoding, thumbnail settings), so items that share a
clip share its files and a rerun reuses them. Once the files written reach ``media_budget_mb`` no more are
written (the budget is overshot by at most one item's files) and the remaining items say so; an item whose
media cannot be decoded shows the error instead.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any

from cavpref.redact import redact

AUDIO_BIT_RATE = 24_000
JPEG_QUALITY = 75


@dataclass
class MediaStats:
    """What was written: files, bytes, items with media, items left out by the budget, decode errors."""

    files: int = 0
    bytes: int = 0
    items: int = 0
    over_budget: int = 0
    errors: int = 0
    shared: int = 0  # items whose media were already written for another item


def _strip(frames, count: int, height: int):
    """``count`` evenly spread frames of (T, H, W, 3), scaled to ``height`` and joined left to right."""
    import numpy as np
    from PIL import Image

    idx = np.unique(np.linspace(0, len(frames) - 1, num=min(count, len(frames))).round().astype(int))
    h, w = frames.shape[1:3]
    width = max(1, round(w * height / h))
    tiles = [Image.fromarray(frames[i]).resize((width, height), Image.BILINEAR) for i in idx]
    strip = Image.new("RGB", (width * len(tiles), height))
    for n, tile in enumerate(tiles):
        strip.paste(tile, (n * width, 0))
    return strip, idx


class MediaWriter:
    """Writes the media of a page's items into ``folder`` (next to the page) and says where they are."""

    def __init__(
        self,
        folder: Path,
        page_dir: Path,
        options,
        bench=None,
        media_root: str = "",
        args=None,
        budget_mb=None,
    ):
        self.folder, self.page_dir, self.opt = Path(folder), Path(page_dir), options
        self.bench, self.root, self.args = bench, media_root, args
        self.budget_mb = options.media_budget_mb if budget_mb is None else budget_mb
        self.budget = int(self.budget_mb * 1e6)  # MB as the page reports them (10^6 bytes)
        self.stats = MediaStats()
        self._done: dict[str, dict[str, Any]] = {}

    def _decoding(self) -> dict:
        if self.bench is None:
            return {}
        policy = self.bench.frame_policy()
        return {
            "frames": asdict(policy) if is_dataclass(policy) else repr(policy),
            "own": getattr(self.bench, "decode_media", None) is not None,
            "sample_rate": getattr(self.args, "sample_rate", 16000),
        }

    def _decode(self, item):
        from cavpref.media.decode import decode

        own = getattr(self.bench, "decode_media", None)
        if own is not None:
            return own(item, self.root)
        return decode(
            item.media,
            self.root,
            frames=self.bench.frame_policy(),
            sample_rate=getattr(self.args, "sample_rate", 16000),
        )

    def name(self, item) -> str:
        blob = {
            "media": item.media,
            "root": str(self.root),
            "decoding": self._decoding(),
            "thumbnails": [self.opt.thumbnail_frames, self.opt.thumbnail_height, self.opt.audio_clip_seconds],
        }
        return hashlib.sha256(json.dumps(blob, sort_keys=True).encode()).hexdigest()[:20]

    def _rel(self, path: Path) -> str:
        return path.relative_to(self.page_dir).as_posix()

    def write(self, item) -> dict[str, Any]:
        """The item's media entry for the page: ``strip`` / ``audio`` paths (relative to the page), frame
        ``times``, or ``error`` / ``note`` saying why there is nothing to show."""
        if not item.media:
            return {"note": "no media (the model got the text alone)"}
        key = self.name(item)
        if key in self._done:
            self.stats.shared += 1
            return self._done[key]
        if self.stats.bytes >= self.budget:
            self.stats.over_budget += 1
            return {
                "note": f"media not written: the page's media budget ({self.budget_mb:g} MB) is "
                "spent (raise --media_budget_mb, or --no_media)"
            }
        try:
            decoded = self._decode(item)
        except Exception as err:  # noqa: BLE001 - shown on the item, as the runner records a skip
            self.stats.errors += 1
            entry = {"error": redact(f"{type(err).__name__}: {err}")}
            self._done[key] = entry
            return entry
        entry: dict[str, Any] = {}
        self.folder.mkdir(parents=True, exist_ok=True)
        if decoded.frames is not None and len(decoded.frames):
            path = self.folder / f"{key}.jpg"
            strip, idx = _strip(decoded.frames, self.opt.thumbnail_frames, self.opt.thumbnail_height)
            if not path.is_file():
                strip.save(path, "JPEG", quality=JPEG_QUALITY)
            entry["strip"] = self._rel(path)
            if decoded.frame_times is not None:
                entry["times"] = [f"{round(float(decoded.frame_times[i]), 2):g}" for i in idx]
            self._count(path)
        if decoded.audio is not None and len(decoded.audio):
            from cavpref.media.write import write_mp4

            path = self.folder / f"{key}.m4a"
            n = int(self.opt.audio_clip_seconds * decoded.sample_rate)
            if not path.is_file():
                write_mp4(
                    path, None, 25.0, decoded.audio[:n], decoded.sample_rate, audio_bit_rate=AUDIO_BIT_RATE
                )
            entry["audio"] = self._rel(path)
            self._count(path)
        if not entry:
            entry["note"] = "no stream decoded (neither frames nor audio)"
        else:
            self.stats.items += 1
            entry["note"] = (
                "; ".join(
                    part
                    for part in (
                        "no video stream" if "strip" not in entry else "",
                        "no audio stream" if "audio" not in entry else "",
                    )
                    if part
                )
                or None
            )
        self._done[key] = entry
        return entry

    def _count(self, path: Path) -> None:
        self.stats.files += 1
        self.stats.bytes += path.stat().st_size
