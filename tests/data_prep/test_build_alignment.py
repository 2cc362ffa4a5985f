"""`cavpref prep` with the AudioSet alignment filter (`align_audioset`): segments whose video and audio
disagree are dropped before generation, counted in stats.json, and the totals still reconcile.

Hand-checkable encoders (as in test_scoring_prefs.py): CLIP-like embeds a frame as its mean RGB, CLAP-like
embeds audio as its energy at 500 / 1000 / 1500 Hz, both embed the labels Red / Green / Blue as the matching
unit vectors. With softmax scale ln 18, T_sim = 0.815 for a clip whose colour and tone agree and 0.0925
for one whose do not.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from cavpref.data_prep.build import PrepConfig, build, format_stats, merge
from cavpref.data_prep.scoring import register_backend
from cavpref.data_prep.tasks.schema import load_outputs
from cavpref.media.write import write_mp4

RGB = {"red": (255, 0, 0), "green": (0, 255, 0), "blue": (0, 0, 255)}
TONES = {"red": 500, "green": 1000, "blue": 1500}
SR = 8000


class Colours:
    fingerprint, logit_scale = "align-colours-v1", 1.0

    def embed_images(self, images):
        return np.array([im.reshape(-1, 3).mean(0) / 255.0 for im in images]) + 1e-9

    def embed_text(self, texts):
        return np.array([np.eye(3)[list(RGB).index(t.lower())] for t in texts])


class Tones:
    fingerprint, sample_rate, window_samples, logit_scale = "align-tones-v1", SR, None, 1.0

    def embed_audio(self, waves):
        out = []
        for w in waves:
            spectrum, freqs = np.abs(np.fft.rfft(w)), np.fft.rfftfreq(len(w), 1 / SR)
            out.append([spectrum[np.abs(freqs - f) < 20].max() for f in TONES.values()])
        return np.array(out)

    embed_text = Colours.embed_text


register_backend("clip", "align_colours", lambda c: Colours())
register_backend("clap", "align_tones", lambda c: Tones())

# (ytid, video colour, audio tone = label). The last two are crossed: their streams disagree.
SEGMENTS = [
    ("redredred01", "red", "red"),
    ("grngrngrn01", "green", "green"),
    ("bluebluebl1", "blue", "blue"),
    ("redblueXX01", "red", "blue"),
    ("grnredXXX01", "green", "red"),
]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("align")
    aset = root / "audioset"
    t = np.arange(SR) / SR
    for ytid, colour, tone in SEGMENTS:
        frames = np.broadcast_to(np.array(RGB[colour], np.uint8), (8, 32, 32, 3))
        audio = (0.5 * np.sin(2 * np.pi * TONES[tone] * t)).astype(np.float32)
        write_mp4(aset / "clips" / f"{ytid}_0.mp4", frames, 8, audio, SR)
    names = {c: c.capitalize() for c in RGB}  # three top-level classes: mutually unrelated (T1)
    (aset / "ontology.json").write_text(
        json.dumps(
            [
                {
                    "id": f"/m/{c}",
                    "name": n,
                    "description": "",
                    "citation_uri": "",
                    "positive_examples": [],
                    "child_ids": [],
                    "restrictions": [],
                }
                for c, n in names.items()
            ]
        )
    )
    (aset / "class_labels_indices.csv").write_text(
        "index,mid,display_name\n" + "".join(f'{i},/m/{c},"{n}"\n' for i, (c, n) in enumerate(names.items()))
    )
    rows = [f'{ytid}, 0.000, 1.000, "/m/{tone}"' for ytid, _, tone in SEGMENTS]
    (aset / "eval_segments.csv").write_text(
        "# Segments csv\n# num_ytids=5\n# YTID, start_seconds, end_seconds, positive_labels\n"
        + "\n".join(rows)
        + "\n"
    )
    scoring = root / "scoring.yaml"
    scoring.write_text(
        json.dumps(
            {
                "clip_backend": "align_colours",
                "clap_backend": "align_tones",
                "clip_scale": math.log(18),
                "clap_scale": math.log(18),
                "num_frames": 4,
                "progress": False,
            }
        )
    )
    return root, scoring


def config(world, out, **kw):
    root, scoring = world
    return PrepConfig(
        world=str(root),
        output_dir=str(out),
        tasks=["COT-Stitch"],
        formats=["jsonl"],
        num_options=3,
        test_fraction=0.0,
        scoring_config=str(scoring),
        progress=False,
        **kw,
    )


def clips(out) -> set[str]:
    items, _ = load_outputs(out)
    return {p.split("/")[-1] for split in items.values() for it in split for p in it.source_ids}


def test_crossed_clips_are_dropped_and_counted(world, tmp_path):
    stats = build(config(world, tmp_path / "on", align_audioset=True))
    assert stats["alignment_dropped"] == {"audioset: T_sim < 0.7": 2}
    assert stats["records_read"] == 5 and stats["records_kept"] == 3 and stats["records_reconcile"]
    assert stats["tasks"]["COT-Stitch"]["eligible"] == 3
    assert clips(tmp_path / "on") == {"redredred01_0.mp4", "grngrngrn01_0.mp4", "bluebluebl1_0.mp4"}
    assert "alignment_dropped:       2  audioset: T_sim < 0.7" in format_stats(stats, ["train"])

    off = build(config(world, tmp_path / "off"))  # the filter is opt-in
    assert off["alignment_dropped"] == {} and off["records_kept"] == 5 and off["records_reconcile"]
    low = build(config(world, tmp_path / "low", align_audioset=True, align_threshold=0.05))  # crossed: 0.0925
    assert low["alignment_dropped"] == {} and low["records_kept"] == 5


def test_shards_count_their_own_drops_and_merge_reconciles(world, tmp_path):
    shards = [tmp_path / f"s{i}" for i in range(2)]
    per_shard = [
        build(config(world, d, align_audioset=True, num_shards=2, shard_index=i))
        for i, d in enumerate(shards)
    ]
    assert all(s["records_reconcile"] for s in per_shard)
    assert sum(sum(s["alignment_dropped"].values()) for s in per_shard) == 2
    merged = merge(tmp_path / "m", [str(d) for d in shards])
    assert merged["alignment_dropped"] == {"audioset: T_sim < 0.7": 2} and merged["records_reconcile"]
    assert clips(tmp_path / "m") == clips(shards[0]) | clips(shards[1])
    assert len(clips(tmp_path / "m")) == 3


def test_alignment_needs_a_data_root(world, tmp_path):
    root, _ = world
    segments = next(root.rglob("eval_segments.csv"))  # annotation files alone: no media root
    labels = next(root.rglob("class_labels_indices.csv"))
    cfg = PrepConfig(output_dir=str(tmp_path / "o"), audioset=[str(segments)], audioset_labels=str(labels),
                     check_media=False, align_audioset=True)  # fmt: skip
    with pytest.raises(ValueError, match="data_root is required by align_audioset"):
        build(cfg)
