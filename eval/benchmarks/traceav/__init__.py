"""TraceAV-Bench (Heinz217/TraceAV-Bench): multi-hop multiple choice over long videos, exact set match.

``data`` reads the released task files and holds the prompt, both answer parsers and evidence-hop
masking; ``metrics`` the pure metrics and the appendix's analyses; ``report`` the report section. Long videos are sampled by
``cavpref.eval.longvideo`` (N frames by seeking, the model's audio window filled with spread chunks).
The input ablations of the paper: ``--drop_stream`` (Table 2's visual-only / audio-only rows),
``--text_only`` (the blindfold run) and ``--hop_mask one|all`` (Mask-1 / Mask-All, Tables 4-5).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from cavpref.eval.benchmarks.traceav import data, report
from cavpref.eval.benchmarks.traceav import metrics as tables
from cavpref.eval.common import media_root_of, select
from cavpref.eval.longvideo import LongVideoPolicy
from cavpref.eval.registry import Benchmark, Loaded, register


@dataclass
class TraceAVOptions:
    """``cavpref eval traceav`` keys of its own."""

    long_num_frames: int | None = field(default=64, metadata={"help": "TraceAV: uniform frames per video"})
    long_fps: float | None = field(default=None, metadata={"help": "TraceAV: frame rate instead (capped)"})
    long_max_frames: int = field(default=64, metadata={"help": "TraceAV: cap on frames with long_fps"})
    audio_window_s: float | None = field(
        default=None,
        metadata={
            "help": "TraceAV: the model's audio window, s (default: its processor's feature extractor, else 30)"
        },
    )
    audio_segments: int = field(default=8, metadata={"help": "TraceAV: chunks spread over the video"})
    durations: str | None = field(default=None, metadata={"help": "TraceAV: JSON video_id -> seconds"})
    hop_mask: str | None = field(
        default=None,
        metadata={
            "help": "TraceAV: blank evidence hops (black frames + silence): one (Mask-1, one hop drawn per "
            "question) | all (Mask-All)"
        },
    )
    hop_mask_seed: int = field(default=0, metadata={"help": "TraceAV: seed of the Mask-1 draw"})

    def __post_init__(self):
        if self.hop_mask not in (None, *data.MASKS):
            raise ValueError(f"--hop_mask must be one of {list(data.MASKS)}, got {self.hop_mask!r}")


@register
class TraceAV(Benchmark):
    name = data.BENCHMARK
    title = "TraceAV-Bench"
    Options = TraceAVOptions
    defaults: ClassVar[dict[str, Any]] = {"max_new_tokens": 32, "batch_size": 4, "chunk_size": 32}
    protocols = ("paper", "official")
    rank_by = ("MH Avg", "Gen. Avg")  # Table 3: Rank (MH -> Gen.)
    report = report
    prediction_format = '\'response\' (free text) or \'prediction\' (letters: "A,C" or ["A", "C"])'

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._policy = None
        self._sampled: dict[str, dict] = {}

    def read(self) -> Loaded:
        items = select(data.read(self.args.data), self.args.tasks, self.args.limit, data=self.args.data)
        given = {"mask": None}
        if self.opt.hop_mask:
            data.mask_hops(items, self.opt.hop_mask, self.opt.hop_mask_seed)
            given = {"mask": f"{data.MASKS[self.opt.hop_mask]} (seed {self.opt.hop_mask_seed})"}
        root = media_root_of(self.args.data, self.args.media_root)
        return Loaded(items, root, {"files": [self.args.data], "items": len(items), "input": given})

    @property
    def policy(self) -> LongVideoPolicy:
        """The long-video sampling; the audio window defaults to what the local model's processor takes."""
        if self._policy is None:
            from cavpref.eval.longvideo import window_from_processor

            o, a = self.opt, self.args
            window = o.audio_window_s
            processor = getattr(getattr(self.backend, "model_io", None), "processor", None)
            if window is None and processor is not None:
                window = window_from_processor(processor)
            size = (a.frame_height, a.frame_width) if a.frame_height and a.frame_width else None
            self._policy = LongVideoPolicy(
                num_frames=o.long_num_frames,
                fps=o.long_fps,
                max_frames=o.long_max_frames,
                frame_size=size,
                audio_window_s=window or 30.0,
                audio_segments=o.audio_segments,
            )
        return self._policy

    @property
    def key_extra(self) -> dict:
        return self.policy.describe()  # changing the sampling never reuses answers

    def frame_policy(self):
        return self.policy.frame_policy()  # long-video sampling decides the frames

    def decode_media(self, item, media_root: str):
        """Long-video sampling: N frames by seeking, the audio window filled with spread chunks."""
        from cavpref.eval.longvideo import decode_long

        media, sampled = decode_long(item.media, media_root, self.policy, sample_rate=self.args.sample_rate)
        self._sampled[item.id] = sampled
        return media

    def prompt(self, item) -> str:
        return data.prompt(item)

    def score(self, jobs):
        out = []
        for j in jobs:
            predicted, rule = data.parse_prediction(j.output, list(j.item.options), self.protocol)
            gold = j.item.answer_letters
            out.append(
                {
                    "task_type": j.item.task,
                    "predicted": list(predicted),
                    "gold": list(gold),
                    "rule": rule,
                    "correct": bool(predicted) and set(predicted) == set(gold),
                    "abstained": not predicted,
                    "sampled": self._sampled.get(j.item.id),
                    "protocol": self.protocol,
                }
            )
        return out

    def metrics(self, scored, outcomes) -> dict[str, Any]:
        lengths = self.durations([it for it, _ in scored])
        return tables.traceav_metrics(
            [
                tables.TraceRecord(
                    it.task,
                    tuple(rs[0]["predicted"]),
                    it.answer_letters,
                    len(it.options),
                    len(it.meta["trajectory"]),
                    tables.first_hop_minute(it.meta["trajectory"]),
                    lengths.get(it.meta["video_id"]),
                    it.meta["video_id"],
                )
                for it, rs in scored
            ]
        )

    def durations(self, items) -> dict[str, float]:
        """Video lengths: --durations JSON first, else the probed media file (when present)."""
        from cavpref.media.probe import probe
        from cavpref.media.spec import MediaError, resolve_path

        given = json.loads(Path(self.opt.durations).read_text()) if self.opt.durations else {}
        root = media_root_of(self.args.data, self.args.media_root)
        out = {}
        for item in items:
            vid = item.meta["video_id"]
            if vid in given:
                out[vid] = float(given[vid])
            elif vid not in out:
                try:
                    out[vid] = probe(resolve_path(root, f"{vid}.mp4")).duration
                except MediaError:
                    pass
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "benchmark": self.name,
            "passes": 1,
            "protocol": self.protocol,
            "sampling": self.policy.describe(),
            "judge": None,
        }

    # external predictions
    def prediction_key(self, row):
        if "id" in row:
            return str(row["id"]), 0
        if {"task_type", "question_id"} <= set(row):
            return f"{data.BENCHMARK}/{row['task_type']}/{row['question_id']}", 0
        return None

    def prediction(self, row):
        if "prediction" in row:
            pred = row["prediction"]
            return ",".join(map(str, pred)) if isinstance(pred, list) else str(pred or "")
        if "response" in row:
            return str(row["response"] or "")
        return None

    # reports
    def headline(self, results):
        m = results["metrics"]
        return {"overall": m["overall"], "gen_avg": m["gen_avg"]["acc"], "mh_avg": m["mh_avg"]["acc"]}

    def columns(self, results):
        m = results["metrics"]
        cols = {v["abbrev"]: v["acc"] for v in m["per_subtask"].values()}
        cols.update({"Gen. Avg": m["gen_avg"]["acc"], "MH Avg": m["mh_avg"]["acc"]})
        entropy = (m.get("error_entropy") or {}).get("general", {}).get("bits")
        corr = (m.get("video_correlation") or {}).get("r")
        return {**cols, "error entropy (bits)": entropy, "video r (MH, Gen.)": corr}
