"""Tiny CLAP / CLIP scorers trained contrastively on a synthetic world's ground truth (train clips only).

``tiny.py``'s random checkpoints exercise the plumbing but score noise, so β calibrated from them is noise.
These are the same architectures (``ClapModel``: HTSAT audio + RoBERTa text; ``CLIPModel``: ViT + CLIP text),
trained for a few CPU minutes with the models' own InfoNCE (``forward(..., return_loss=True)``) on pairs the
world's ``world.json`` states: a frame of a clip and the name of an entity *seen* in it (CLIP), a one-window
audio crop and the name of an entity *sounding* in that window (CLAP). Every batch holds distinct labels, so
an in-batch negative is never the positive's own label. Only clips of the project's train split
(``data_prep.build.split_of_path``, the same hash ``cavpref prep`` splits by) are used; the test clips stay
held out for ``scripts/bench_tiny_scorers.py``. The result is saved with ``save_pretrained`` (model and
processor), so the scorers load it with the real ``from_pretrained(path)`` code path.
"""

from __future__ import annotations

import json
import os
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm
from transformers.utils import logging

from cavpref.output_dir import OutputArguments, OutputDirError, claim_output_dir, release_output_dir

from ..build import PrepConfig, split_of_path
from .media import resample
from .tiny import save_tiny_clap, save_tiny_clip

logger = logging.get_logger(__name__)

SOURCES = ("music_avqa", "avqa", "audioset")


@dataclass
class TinyScorerConfig(OutputArguments):
    """One tiny scorer's training run (``cavpref model tiny-clap`` / ``tiny-clip``)."""

    world: str = field(default="", metadata={"help": "a `cavpref world` folder (reads world.json + media)"})
    out: str = field(default="", metadata={"help": "output folder: an HF model folder (model + processor)"})
    steps: int | None = field(
        default=None,
        metadata={
            "help": "optimizer steps, one batch of distinct labels each (default: CLAP 1000, CLIP 300, the measured "
            "settings of docs/scoring.md)"
        },
    )
    batch_size: int = field(default=20, metadata={"help": "labels per batch (at most the label set's size)"})
    learning_rate: float = field(default=2e-3, metadata={"help": "AdamW learning rate (cosine decay)"})
    seed: int = field(default=0, metadata={"help": "initial weights and batch sampling"})
    split_seed: int = field(default=0, metadata={"help": "the prep split hash seed (PrepConfig.split_seed)"})
    test_fraction: float = field(default=0.2, metadata={"help": "PrepConfig.test_fraction of the split"})
    sample_rate: int = field(default=16000, metadata={"help": "CLAP: audio rate the model is built for"})
    num_mel_bins: int = field(
        default=32, metadata={"help": "CLAP: mel bins (HTSAT spec_size 64: <= 32 for 1-s windows)"}
    )
    image_size: int = field(default=64, metadata={"help": "CLIP: square input size of the vision tower"})
    frames_per_clip: int = field(default=8, metadata={"help": "CLIP: frames decoded per train clip"})
    hidden_size: int = field(default=64, metadata={"help": "width of both towers"})
    progress: bool = field(default=True, metadata={"help": "tqdm bar over the steps"})

    def __post_init__(self):
        if not self.world or not self.out:
            raise ValueError("TinyScorerConfig: --world and --out are required")
        if not (Path(self.world) / "world.json").is_file():
            raise FileNotFoundError(
                f"TinyScorerConfig.world: {Path(self.world) / 'world.json'} does not exist"
            )
        if (self.steps is not None and self.steps < 1) or self.batch_size < 2:
            raise ValueError(
                f"TinyScorerConfig: steps >= 1 and batch_size >= 2 needed, got {self.steps}, "
                f"{self.batch_size}"
            )


def label_text(name: str) -> str:
    """World entity name -> the text the scorers see ("police_car" -> "police car")."""
    return str(name).replace("_", " ")


def world_labels(manifest: dict) -> list[str]:
    """The world's label set: every instrument the world uses and every sound source, in catalogue order."""
    n = manifest["config"]["num_instruments"]
    cat = manifest["catalogue"]
    return [label_text(e["name"]) for e in cat["instruments"][:n]] + [
        label_text(e["name"]) for e in cat["sources"]
    ]


def clip_entities(clip: dict) -> list[dict]:
    return clip.get("instruments") or clip.get("sources") or []


def seen_labels(clip: dict) -> set[str]:
    return {label_text(e["name"]) for e in clip_entities(clip) if e.get("visible") and e.get("slot")}


def heard_labels(
    clip: dict, start: float = 0.0, end: float | None = None, min_overlap: float = 0.25
) -> set[str]:
    """Entities sounding for at least ``min_overlap`` s within [start, end) (the whole clip by default)."""
    end = clip["duration"] if end is None else end
    out = set()
    for e in clip_entities(clip):
        events = e.get("events") or []
        overlap = sum(max(0.0, min(b, end) - max(a, start)) for a, b in events)
        if e.get("sounding") and overlap >= min(min_overlap, end - start):
            out.add(label_text(e["name"]))
    return out


def world_clips(
    world: str | os.PathLike, split: str, split_seed: int = 0, test_fraction: float = 0.2
) -> list[dict]:
    """The manifest's clips (all sources) whose file falls in ``split`` ("train" / "test") under the prep hash."""
    manifest = json.loads((Path(world) / "world.json").read_text())
    cfg = PrepConfig(split_seed=split_seed, test_fraction=test_fraction)
    want = {"train": ("train", "validation"), "test": ("test",)}[split]
    return [c for s in SOURCES for c in manifest.get(s, []) if split_of_path(c["file"], cfg) in want]


def _decode(world: Path, clip: dict, frames: int | None, sample_rate: int):
    from cavpref.media.decode import FramePolicy, decode
    from cavpref.media.spec import clip as clip_spec

    policy = None if frames is None else FramePolicy(num_frames=frames)
    dm = decode(clip_spec(clip["file"]), world, frames=policy, sample_rate=sample_rate)
    return dm


def _batches(by_label: dict[str, list], batch_size: int, rng: random.Random):
    """Forever: a batch of distinct labels, each with one of its examples drawn at random."""
    labels = sorted(k for k, v in by_label.items() if v)  # not dict / set order: it follows the hash seed
    while True:
        pick = rng.sample(labels, min(batch_size, len(labels)))
        yield [(lab, rng.choice(by_label[lab])) for lab in pick]


DEFAULT_STEPS = {"clap": 1000, "clip": 300}


def _train(model, make_inputs, by_label: dict[str, list], cfg: TinyScorerConfig, kind: str) -> list[float]:
    """AdamW + cosine schedule on the model's own contrastive loss; returns the loss of every step."""
    from transformers import get_cosine_schedule_with_warmup

    desc = f"training tiny {kind.upper()}"
    steps = cfg.steps or DEFAULT_STEPS[kind]

    rng = random.Random(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=0.01)
    sched = get_cosine_schedule_with_warmup(opt, max(1, steps // 20), steps)
    model.train()
    losses = []
    batches = _batches(by_label, cfg.batch_size, rng)
    for _ in tqdm(range(steps), desc=desc, disable=not cfg.progress):
        batch = next(batches)
        out = model(**make_inputs(batch), return_loss=True)
        opt.zero_grad()
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(out.loss.detach()))
    model.eval()
    return losses


def train_tiny_clap(cfg: TinyScorerConfig) -> dict:
    """Train a tiny ClapModel on (1-s audio window, sounding entity) pairs of the train clips; save it."""
    from transformers import ClapModel, ClapProcessor

    torch.manual_seed(cfg.seed)
    world = Path(cfg.world)
    out = save_tiny_clap(
        cfg.out,
        seed=cfg.seed,
        sample_rate=cfg.sample_rate,
        max_length_s=1,
        hidden_size=cfg.hidden_size,
        num_mel_bins=cfg.num_mel_bins,
    )
    model, processor = ClapModel.from_pretrained(out), ClapProcessor.from_pretrained(out)
    fe = processor.feature_extractor
    win = int(fe.nb_max_samples)
    clips = world_clips(world, "train", cfg.split_seed, cfg.test_fraction)
    waves, labels = [], []
    for clip in tqdm(clips, desc="decoding train audio", disable=not cfg.progress):
        dm = _decode(world, clip, None, cfg.sample_rate)
        if dm.audio is None:
            continue
        audio = resample(dm.audio, dm.sample_rate, cfg.sample_rate)
        step = win // 2
        for s in range(0, max(1, len(audio) - win + 1), step):
            heard = heard_labels(clip, s / cfg.sample_rate, (s + win) / cfg.sample_rate)
            if heard:
                waves.append(audio[s : s + win])
                labels.append(heard)
    feats = fe(waves, sampling_rate=cfg.sample_rate, return_tensors="pt")["input_features"]
    return _fit_and_save(model, processor, out, cfg, "clap", clips, labels, "input_features", feats)


def train_tiny_clip(cfg: TinyScorerConfig) -> dict:
    """Train a tiny CLIPModel on (frame, visible entity) pairs of the train clips; save it."""
    from transformers import CLIPModel, CLIPProcessor

    torch.manual_seed(cfg.seed)
    world = Path(cfg.world)
    out = save_tiny_clip(cfg.out, seed=cfg.seed, image_size=cfg.image_size, hidden_size=cfg.hidden_size)
    model, processor = CLIPModel.from_pretrained(out), CLIPProcessor.from_pretrained(out)
    clips = world_clips(world, "train", cfg.split_seed, cfg.test_fraction)
    frames, labels = [], []
    for clip in tqdm(clips, desc="decoding train frames", disable=not cfg.progress):
        seen = seen_labels(clip)
        if not seen:
            continue
        dm = _decode(world, clip, cfg.frames_per_clip, 16000)
        if dm.frames is None:
            continue
        frames += list(dm.frames)
        labels += [seen] * len(dm.frames)
    pixels = processor.image_processor(images=frames, return_tensors="pt")["pixel_values"]
    return _fit_and_save(model, processor, out, cfg, "clip", clips, labels, "pixel_values", pixels)


def _fit_and_save(
    model, processor, out: Path, cfg, kind: str, clips, labels: list, media_key: str, media
) -> dict:
    """Contrastive training on (media row, one of its labels) pairs, then save model + processor + training.json.

    ``labels[i]`` is the set of entity names of media row ``i`` (heard for CLAP, seen for CLIP); each batch draws
    distinct labels (``_train``), so no negative is the positive's own label."""
    by_label: dict[str, list[int]] = {}
    for i, names_i in enumerate(labels):
        for lab in sorted(names_i):  # a set of names: its order changes with PYTHONHASHSEED
            by_label.setdefault(lab, []).append(i)
    names = sorted(by_label)
    tok = processor.tokenizer(names, padding=True, return_tensors="pt")
    row = {n: i for i, n in enumerate(names)}

    def inputs(batch):
        t = [row[lab] for lab, _ in batch]
        return {
            "input_ids": tok["input_ids"][t],
            "attention_mask": tok["attention_mask"][t],
            media_key: media[[i for _, i in batch]],
        }

    losses = _train(model, inputs, by_label, cfg, kind)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    info = _write_info(out, cfg, kind, clips, len(labels), names, losses)
    logger.info(
        f"tiny {kind.upper()}: {len(labels)} examples of {len(clips)} train clips, loss {losses[0]:.3f} -> "
        f"{np.mean(losses[-20:]):.3f}; saved to {out}"
    )
    return info


def _write_info(
    out: Path,
    cfg: TinyScorerConfig,
    kind: str,
    clips: list,
    examples: int,
    labels: list[str],
    losses: list[float],
) -> dict:
    """``training.json`` next to the weights: what it was trained on (train clip files), and the loss curve."""
    from dataclasses import asdict

    info = {
        "kind": kind,
        "config": asdict(cfg),
        "train_clips": sorted(c["file"] for c in clips),
        "examples": examples,
        "labels": labels,
        "loss_first": losses[0],
        "loss_last": float(np.mean(losses[-min(20, len(losses)) :])),
        "losses": losses,
    }
    (Path(out) / "training.json").write_text(json.dumps(info, indent=1))
    return info


TRAINERS = {"tiny-clap": train_tiny_clap, "tiny-clip": train_tiny_clip}


def main(argv: list[str]) -> int:
    """``cavpref model tiny-clap|tiny-clip --world DIR --out DIR [--steps N ...]`` (``--help`` lists the keys)."""
    from cavpref.parsing import parse_args

    if not argv or argv[0] not in TRAINERS:
        print(f"usage: cavpref model {{{','.join(TRAINERS)}}} --world DIR --out DIR [options]")
        return 2
    name = argv[0]
    (cfg,) = parse_args([TinyScorerConfig], argv[1:], prog=f"cavpref model {name}")
    try:
        out = claim_output_dir(
            cfg.out, "model", overwrite=cfg.overwrite_output_dir, inputs={"world": cfg.world}, key="out"
        )
    except OutputDirError as err:
        print(f"cavpref model {name}: {err}", file=sys.stderr)
        return 2
    cfg.out = out
    info = TRAINERS[name](cfg)
    release_output_dir(out)
    print(
        f"wrote {name} to {cfg.out}: {info['examples']} examples of {len(info['train_clips'])} train clips, "
        f"{len(info['labels'])} labels, loss {info['loss_first']:.3f} -> {info['loss_last']:.3f}"
    )
    return 0
