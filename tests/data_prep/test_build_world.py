"""End to end: `cavpref world` -> `cavpref prep` (real readers, tables, generators, writers), the specs
decoded by the media layer, and the similarity-score switch with tiny CLAP / CLIP checkpoints."""

from __future__ import annotations

import json

import pytest

from cavpref.data import TASKS
from cavpref.data_prep.build import PrepConfig, build
from cavpref.data_prep.tasks.schema import load_outputs
from cavpref.media.decode import FramePolicy, decode
from cavpref.media.spec import from_json, resolve_path, sources

synthetic = pytest.importorskip("cavpref.data_prep.synthetic.world")
WorldConfig = pytest.importorskip("cavpref.data_prep.synthetic.config").WorldConfig


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    out = tmp_path_factory.mktemp("world") / "w"
    synthetic.generate_world(
        WorldConfig(out=str(out), seed=3, num_clips=8, workers=1, width=64, height=64, fps=4, duration=2.0)
    )
    return out


def test_build_from_generated_world(world, tmp_path):
    stats = build(
        PrepConfig(world=str(world), output_dir=str(tmp_path / "out"), formats=["arrow"], progress=False)
    )
    assert stats["records_reconcile"] and stats["records_kept"] > 0
    assert all(t["reconcile"] for t in stats["tasks"].values())
    assert all(stats["tasks"][t]["items"] > 0 for t in TASKS), {
        t: v["skipped"] for t, v in stats["tasks"].items()
    }
    items, prefs = load_outputs(tmp_path / "out")
    everything = [i for split in items.values() for i in split]
    train_clips = {p for i in items["train"] for p in i.source_ids}
    assert not train_clips & {p for i in items.get("test", []) for p in i.source_ids}
    for item in everything:  # every clip a spec names exists under the world
        for s in sources(from_json(item.media)):
            assert resolve_path(world, s.path).is_file()
    # the media layer decodes what the generators describe, with the stream each task removes gone
    policy = FramePolicy(num_frames=2)
    first = {t: next(i for i in everything if i.task == t) for t in ("MVIT", "MVT", "MAT", "COT-Swap", "CAT")}
    assert decode(first["MVIT"].media, world, frames=policy).has_video
    mvt, mat = (
        decode(first["MVT"].media, world, frames=policy),
        decode(first["MAT"].media, world, frames=policy),
    )
    assert (mvt.has_video, mvt.has_audio, mat.has_video, mat.has_audio) == (False, True, True, False)
    swap = decode(first["COT-Swap"].media, world, frames=policy)
    assert swap.has_video and swap.has_audio and swap.duration > 2.5  # two clips one after the other
    assert decode(first["CAT"].media, world, frames=None).has_audio
    assert sum(len(p) for p in prefs.values()) == len(everything)


def test_similarity_scores_switch(tmp_path):
    from cavpref.data_prep.scoring.tiny import save_tiny_clap, save_tiny_clip

    world = tmp_path / "w"  # a smaller world: every distinct clip is decoded and embedded
    synthetic.generate_world(
        WorldConfig(
            out=str(world),
            seed=5,
            num_clips=3,
            workers=1,
            width=64,
            height=64,
            fps=4,
            duration=2.0,
            questions_per_clip=3,
        )
    )

    clap, clip = save_tiny_clap(tmp_path / "clap"), save_tiny_clip(tmp_path / "clip")
    scoring = tmp_path / "scoring.yaml"
    scoring.write_text(
        json.dumps(
            {
                "clap_model": str(clap),
                "clip_model": str(clip),
                "num_frames": 2,
                "progress": False,
                "vocabulary": ["piano", "dog", "car", "rain"],
            }
        )
    )
    stats = build(
        PrepConfig(
            world=str(world),
            output_dir=str(tmp_path / "out"),
            tasks=["MVIT", "MAT"],
            settings=["instruction"],
            formats=["jsonl"],
            score=True,
            scoring_config=str(scoring),
            progress=False,
        )
    )
    _, prefs = load_outputs(tmp_path / "out")
    rows = [p for split in prefs.values() for p in split]
    assert len(rows) == sum(stats["preferences"].values()) > 0
    for p in rows:
        assert isinstance(p.clap_delta, float)
        assert (p.avsm_delta_v is not None) == (p.task == "MVIT") and (p.avsm_delta_a is not None) == (
            p.task == "MAT"
        )


def test_tables_group_level_reaches_the_saved_tables(world, tmp_path):
    """`tables_group_level` picks the T2 depth from the prep config (0: top-level supercategories)."""
    groups = {}
    for level in (0, 1):
        out = tmp_path / f"lvl{level}"
        build(
            PrepConfig(
                world=str(world),
                output_dir=str(out),
                formats=["jsonl"],
                progress=False,
                tasks=["MCIT"],
                tables_group_level=level,
            )
        )
        groups[level] = set(json.loads((out / "lookup_tables.json").read_text())["t2"])
    assert groups[0] != groups[1] and len(groups[1]) > len(groups[0])
