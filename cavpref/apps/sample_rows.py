"""Synthetic preference rows with real media: three short mp4 clips and one row per AVTrustBench task with the
anchors each task's switches need (``examples``).

``cavpref check`` collates them when a recipe's ``train_dataset`` does not exist yet (tokens per row from the
recipe's media budgets, at a clip size the user names), and the trainer tests train on them
(tests/test_trainer_fixtures.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cavpref.data import AnchorPair, PreferenceExample
from cavpref.media.spec import clip, combine, concat, drop_video, mute, to_json

CLIPS = ("a.mp4", "b.mp4", "c.mp4")


def write_clips(root: Path, height: int = 56, width: int = 56, seconds: float = 1.0) -> None:
    """The three clips: 4 fps of one random image (8-pixel blocks above 56 px, so HD sizes stay cheap to encode)
    and a tone, ``seconds`` long."""
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
