"""The rows the benchmarks, the GPU check, ``cavpref check`` and the trainer tests train on: every task's
preference row pattern (``cavpref check`` collates them when a recipe's ``train_dataset`` does not exist yet, on
clips at a size the user names, for the tokens per row under the recipe's media budgets).

``examples`` gives one preference row per task (per repetition) over three clips, with the anchors each task's
switches need, in the media patterns data_prep builds (MVT without video, MAT without audio, COT rows over two
clips, ...). ``write_clips`` writes those clips as real mp4 files (PyAV). ``benchmark_rows`` makes every
sample's prompt distinct, so a benchmark measures sharing within a sample (y_w, y_l and the anchors on the same
prefix), never between samples.

``RealisticMedia`` replaces the collator's decoder with media of a realistic size (8 frames of 448 x 448 and
10 s of audio: 1,024 video and 250 audio tokens per clip through Qwen2.5-Omni's processor) in the streams each
row's MediaSpec presents, without decoding files: a ~40-token prompt and a response of a few tokens against
~1,300 media tokens is what a real audio-visual row looks like.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np

from cavpref.data import AnchorPair, PreferenceExample
from cavpref.media.spec import (
    clip,
    combine,
    concat,
    drop_video,
    from_json,
    has_audio,
    has_video,
    mute,
    to_json,
)

CLIPS = ("a.mp4", "b.mp4", "c.mp4")


def write_clips(root: Path, height: int = 56, width: int = 56, seconds: float = 1.0) -> None:
    """The three clips: 4 fps of one random image (8-pixel blocks above 56 px, so HD sizes stay cheap to encode)
    and a tone, ``seconds`` long. Clips already in ``root`` are kept."""
    from cavpref.media.write import write_mp4

    root.mkdir(parents=True, exist_ok=True)
    block = 1 if max(height, width) <= 56 else 8
    for k, name in enumerate(CLIPS):
        if (root / name).exists():
            continue
        rng = np.random.default_rng(k)
        img = rng.integers(0, 256, (1, height // block, width // block, 3), dtype=np.uint8)
        img = img.repeat(block, axis=1).repeat(block, axis=2)
        frames = np.repeat(img, max(1, round(4 * seconds)), axis=0)
        t = np.arange(round(16000 * seconds)) / 16000
        audio = (0.3 * np.sin(2 * np.pi * (220 + 110 * k) * t)).astype(np.float32)
        write_mp4(root / name, frames, fps=4, audio=audio, sample_rate=16000)


def examples(n_per_task: int = 1, seed: int = 0) -> list[PreferenceExample]:
    """Preference rows for every task, with the anchors each task's switches need (released variant too)."""
    rng = np.random.default_rng(seed)
    out = []
    for rep in range(n_per_task):
        a, b, c = (clip(n) for n in (CLIPS[rep % 3], CLIPS[(rep + 1) % 3], CLIPS[(rep + 2) % 3]))
        right, wrong, nota = "a violin", "a cello", "None of the above"

        def v(pert, right=right, a=a):
            return AnchorPair(right, a, pert)

        specs = {
            "MCIT": (a, nota, wrong, None, None),
            "ICIT": (a, nota, "a flute", None, None),
            "MVIT": (combine(b, a), nota, wrong, v(combine(b, a)), None),
            "MAIT": (combine(a, b), nota, wrong, None, v(combine(a, b))),
            "COT-Stitch": (concat(a, c), "a violin then a drum", "a drum then a violin", None, None),
            "COT-Swap": (
                concat(combine(a, b), combine(b, a)),
                nota,
                wrong,
                v(concat(combine(a, b), combine(b, a))),
                v(concat(combine(a, b), combine(b, a))),
            ),
            "CAT": (concat(a, b), "yes", "no", None, None),
            "MVT": (drop_video(a), "The video is missing", wrong, v(drop_video(a)), None),
            "MAT": (mute(a), "The audio is missing", wrong, None, v(mute(a))),
        }
        for task, (media, chosen, rejected, vis, aud) in specs.items():
            out.append(
                PreferenceExample(
                    id=f"{task}-{rep}",
                    task=task,
                    source="test",
                    category="Existential",
                    prompt="Which instrument is playing?",
                    media=to_json(media),
                    chosen=chosen,
                    rejected=rejected,
                    visual=vis,
                    audio=aud,
                    clap_delta=float(rng.uniform(0, 1)),
                    avsm_delta_v=float(rng.uniform(0, 1)),
                    avsm_delta_a=float(rng.uniform(0, 1)),
                )
            )
    return out


def benchmark_rows(n_per_task: int = 1, seed: int = 0) -> list[PreferenceExample]:
    """``examples`` with a distinct prompt per sample: no two samples share a prefix, so what a benchmark
    measures is the sharing inside one sample. The first 9 rows are one sample of each task (the uniform mix)."""
    rows = examples(n_per_task, seed)
    for k, e in enumerate(rows):
        e.prompt = f"{e.prompt} (question {k})"
    return rows


class RealisticMedia:
    """``decode(spec)`` -> deterministic synthetic media of a realistic size in the streams ``spec`` presents
    (cached per spec): ``frames`` frames of ``size`` x ``size`` and ``seconds`` of audio per clip."""

    def __init__(self, frames: int = 8, size: int = 448, seconds: float = 10.0):
        self.frames, self.size, self.seconds = frames, size, seconds
        self.cache: dict[str, object] = {}

    def __call__(self, spec: str):
        if spec not in self.cache:
            from cavpref.models.tiny import demo_media

            parsed = from_json(spec)
            self.cache[spec] = demo_media(
                zlib.crc32(spec.encode()) % 997,
                video=has_video(parsed),
                audio=has_audio(parsed),
                num_frames=self.frames,
                size=self.size,
                seconds=self.seconds,
            )
        return self.cache[spec]
