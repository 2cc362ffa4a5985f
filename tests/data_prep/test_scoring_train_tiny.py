"""Tiny CLAP / CLIP scorers trained on a synthetic world: train clips only, the loss falls, and the saved
folder loads through the real ``from_pretrained`` scorer path and scores."""

import json

import numpy as np
import pytest

from cavpref.data_prep.scoring import Scorers, ScoringConfig
from cavpref.data_prep.scoring.train_tiny import (
    TinyScorerConfig,
    heard_labels,
    main,
    train_tiny_clap,
    train_tiny_clip,
    world_clips,
    world_labels,
)
from cavpref.data_prep.synthetic import WorldConfig, generate_world
from cavpref.media.spec import clip as clip_spec
from cavpref.media.spec import to_json

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    out = tmp_path_factory.mktemp("world") / "w"
    generate_world(WorldConfig(out=str(out), seed=3, num_clips=4, workers=1, width=56, height=56))
    return out


def test_heard_labels_by_window():
    clip = {
        "duration": 4.0,
        "instruments": [
            {"name": "piano", "sounding": True, "events": [[0.0, 1.0]]},
            {"name": "police_car", "sounding": True, "events": [[2.5, 4.0]]},
            {"name": "drum", "sounding": False, "events": []},
        ],
    }
    assert heard_labels(clip) == {"piano", "police car"}
    assert heard_labels(clip, 0.0, 1.0) == {"piano"}
    assert heard_labels(clip, 0.9, 1.9) == set()  # 0.1 s of piano is below the 0.25 s overlap
    assert heard_labels(clip, 3.0, 4.0) == {"police car"}


def test_split_matches_prep_hash(world):
    train = {c["file"] for c in world_clips(world, "train")}
    test = {c["file"] for c in world_clips(world, "test")}
    assert train and not train & test and len(train | test) == 12


@pytest.mark.parametrize("kind", ["clap", "clip"])
def test_trains_saves_and_scores(world, tmp_path, kind):
    cfg = TinyScorerConfig(
        world=str(world),
        out=str(tmp_path / kind),
        steps=30,
        batch_size=8,
        learning_rate=3e-3,
        hidden_size=32,
        image_size=32,
        frames_per_clip=2,
        progress=False,
    )
    info = (train_tiny_clap if kind == "clap" else train_tiny_clip)(cfg)
    assert set(info["train_clips"]) == {c["file"] for c in world_clips(world, "train")}
    losses = info["losses"]
    assert len(losses) == 30 and np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5])
    saved = json.loads((tmp_path / kind / "training.json").read_text())
    assert saved["loss_last"] == info["loss_last"]

    labels = world_labels(json.loads((world / "world.json").read_text()))
    scoring = ScoringConfig(
        clap_model=str(tmp_path / "clap"),
        clip_model=str(tmp_path / "clip"),
        vocabulary=labels,
        num_frames=2,
        progress=False,
    )
    scorers = Scorers(scoring, world)
    media = [to_json(clip_spec(c["file"])) for c in world_clips(world, "test") + world_clips(world, "train")][
        :2
    ]
    scorer = scorers.clap if kind == "clap" else scorers.clip
    scores = scorer.score(media, labels[:2])
    assert scores.shape == (2,) and np.all((scores >= 0) & (scores <= 1))
    # the weights loaded are the trained ones, not a fresh initialisation
    from safetensors.numpy import load_file

    trained = load_file(str(tmp_path / kind / "model.safetensors"))
    loaded = dict(scorer.encoder.model.state_dict())
    name = next(k for k in trained if k.endswith(("logit_scale", "logit_scale_a")))
    assert np.array_equal(trained[name], loaded[name].numpy())
    assert not np.isclose(float(trained[name]), np.log(1 / 0.07))  # moved from its initial value


def test_command_line(world, tmp_path, capsys):
    assert (
        main(
            [
                "tiny-clip",
                "--world",
                str(world),
                "--out",
                str(tmp_path / "c"),
                "--steps",
                "2",
                "--hidden_size",
                "32",
                "--image_size",
                "32",
                "--frames_per_clip",
                "1",
                "--no_progress",
            ]
        )
        == 0
    )
    assert "wrote tiny-clip" in capsys.readouterr().out
    assert (tmp_path / "c" / "model.safetensors").is_file()
    with pytest.raises((SystemExit, ValueError)):
        main(["tiny-clap", "--world", str(world), "--out", str(tmp_path / "x"), "--no_such_key", "1"])


@pytest.mark.slow  # two training subprocesses per scorer: 26-28 s each in the default suite on 2 busy cores
@pytest.mark.parametrize("kind", ["tiny-clap", "tiny-clip"])
def test_same_weights_whatever_the_hash_seed(world, tmp_path, kind):
    """Two processes with different PYTHONHASHSEED train identical scorers: the batches are drawn from sorted
    label lists, not from set / dict order, which follows the string hash (found by rerunning the quickstart:
    the scorers, and so the calibrated β, differed between two runs of the same command)."""
    import os
    import subprocess
    import sys

    from safetensors.torch import load_file

    weights = []
    for seed in ("1", "2"):
        out = tmp_path / f"h{seed}"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "cavpref.apps.cli",
                "model",
                kind,
                "--world",
                str(world),
                "--out",
                str(out),
                "--steps",
                "6",
                "--batch_size",
                "8",
                "--hidden_size",
                "32",
                "--image_size",
                "32",
                "--frames_per_clip",
                "2",
                "--progress",
                "false",
            ],
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed, "OMP_NUM_THREADS": "1"},
            capture_output=True,
        )
        weights.append(load_file(out / "model.safetensors"))
    a, b = weights
    assert [k for k in a if not (a[k] == b[k]).all()] == []
