"""Why does a start not know *where*? Two probes of one checkpoint of a ``bench_start_perception.py`` run.

    OMP_NUM_THREADS=1 python scripts/probe_where.py --run runs/p/default --model start_captions

1. **Slot tokens**: one entity alone on a scene, drawn in the left, middle and right slot (the world's own
   renderer, the run's ``--background_ramp``, resized as the pipeline decodes), through the checkpoint's vision
   tower; the cosine similarity of the merged token holding the entity, between slots. Qwen2.5-Omni's tower has
   no absolute position embedding (2-D RoPE only): ~1.0 means its output does not say where the entity is.
2. **Place tokens, teacher-forced**: the "which objects are sounding, and where?" caption of clips with the
   true answer as input; how often the next-token argmax is the true place word ("in" / "on" / "off",
   "left" / "middle" / "right"). It separates a model that never learnt the places from one that knows them
   and loses them in greedy decoding.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from cavpref.data_prep.synthetic.catalogue import INSTRUMENTS, SLOTS
from cavpref.data_prep.synthetic.visuals import Placed, render

from cavpref.apps.quickstart import QuickstartConfig
from cavpref.apps.quickstart.data import clip_captions, split_clips
from cavpref.apps.quickstart.pipeline import stage_folders
from cavpref.media.decode import FramePolicy, decode, resize_frames
from cavpref.media.spec import clip, to_json
from cavpref.models.base import Row
from cavpref.models.registry import load_model_io
from cavpref.parsing import parse_args

PLACE_WORDS = {"in", "on", "off", "left", "middle", "right"}


@dataclass
class ProbeArguments:
    run: str = field(
        metadata={
            "help": "a bench_start_perception.py or cavpref quickstart --out folder (quickstart_config.json)"
        }
    )
    model: str = field(default="start_captions", metadata={"help": "stage folder of the checkpoint in --run"})
    clips: str = field(
        default="caption_world",
        metadata={
            "help": "clips of the teacher-forced probe: caption_world (every 20th: trained on) or test"
        },
    )
    num_clips: int = field(default=20, metadata={"help": "clips of the teacher-forced probe"})


def slot_similarity(io, cfg: QuickstartConfig) -> list[float]:
    """Mean cosine similarity of the entity's merged token between (left, middle), (left, right), (middle,
    right), over the first eight instruments on the "outdoor" scene."""
    proc, sims = io.processor, []
    for inst in INSTRUMENTS[:8]:
        tokens = []
        for slot in range(len(SLOTS)):
            frames = render(
                "outdoor",
                [Placed(inst.color, inst.shape, slot, [])],
                1.0,
                4.0,
                112,
                112,
                True,
                cfg.background_ramp,
            )
            frames = resize_frames(frames, (cfg.frame_size, cfg.width))
            pixels = cfg.frame_size * cfg.width
            enc = proc.video_processor(
                videos=[frames],
                size={"shortest_edge": pixels, "longest_edge": pixels},
                do_sample_frames=False,
                input_data_format="channels_last",
                return_tensors="pt",
            )
            t, h, w = (int(x) for x in enc["video_grid_thw"][0])
            with torch.no_grad():
                out = io.model.get_video_features(
                    enc["pixel_values_videos"], enc["video_grid_thw"]
                ).pooler_output
            grid = torch.cat(list(out) if isinstance(out, (tuple, list)) else [out]).reshape(
                t, h // 2, w // 2, -1
            )
            column = min(w // 2 - 1, int((slot + 0.5) * (w // 2) / len(SLOTS)))
            tokens.append(grid[0, h // 4, column])
        cos = torch.nn.functional.cosine_similarity
        sims.append([float(cos(tokens[a], tokens[b], dim=0)) for a, b in ((0, 1), (0, 2), (1, 2))])
    return np.mean(sims, axis=0).round(3).tolist()


def place_tokens(
    io, cfg: QuickstartConfig, folders: dict, which: str, n: int
) -> tuple[int, int, float, list[str]]:
    """(place tokens right, place tokens, their mean teacher-forced probability, the first clips' captions with
    each wrong guess in brackets). A model that reads the places gives the true word a probability near 1; one
    that guesses gives each slot word its share of the training captions (~1/3), whatever precedes it."""
    world = Path(folders["caption_world" if which == "caption_world" else "world"])
    every = [
        c
        for s in ("music_avqa", "avqa", "audioset")
        for c in json.loads((world / "world.json").read_text())[s]
    ]
    if which == "caption_world":
        chosen = sorted(every, key=lambda c: c["file"])[::20][:n]
    else:
        _, test = split_clips(Path(folders["data"]))
        chosen = [c for c in every if c["file"] in test][:n]
    policy = FramePolicy(num_frames=cfg.num_frames, size=(cfg.frame_size, cfg.width))
    tok, right, total, prob, shown = io.tokenizer, 0, 0, 0.0, []
    for c in chosen:
        prompt, truth = clip_captions(c)[2]
        batch = io.collate(
            [
                Row(
                    prompt,
                    truth,
                    decode(to_json(clip(c["file"])), str(world), frames=policy),
                    c["file"],
                    c["file"],
                )
            ]
        )
        with torch.no_grad():
            logits = io.forward_logits(io.model, batch)
        labels = batch["labels"][0]
        at = (labels != -100).nonzero().flatten()
        probs = logits[0, at - 1].softmax(-1)
        pairs = [
            (tok.decode([int(a)]), tok.decode([int(b)]), float(p[a]))
            for a, b, p in zip(labels[at], probs.argmax(-1), probs)
        ]
        for word, guess, p in pairs:
            if word.strip() in PLACE_WORDS:
                total += 1
                right += word == guess
                prob += p
        shown.append("".join(w if w == g else f"{w}[{g.strip()}]" for w, g, _ in pairs))
    return right, total, prob / max(total, 1), shown


def main(argv=None) -> int:
    (args,) = parse_args(
        [ProbeArguments], sys.argv[1:] if argv is None else argv, prog="scripts/probe_where.py"
    )
    torch.set_num_threads(1)
    run = Path(args.run)
    cfg = QuickstartConfig(**json.loads((run / "quickstart_config.json").read_text()))
    io = load_model_io(
        str(run / args.model),
        dtype="float32",
        num_frames=cfg.num_frames,
        frame_height=cfg.frame_size,
        frame_width=cfg.width,
        audio_max_seconds=cfg.audio_seconds,
    )
    sims = slot_similarity(io, cfg)
    right, total, prob, shown = place_tokens(io, cfg, stage_folders(run), args.clips, args.num_clips)
    print(
        f"| run | model | entity token cos (left-middle, left-right, middle-right) | place tokens right, "
        f"teacher-forced ({args.clips}) | mean probability of the true place token |\n|---|---|---|---|---|"
    )
    print(f"| {run.name} | {args.model} | {sims} | {right}/{total} | {prob:.3f} |\n")
    print("\n".join(shown[:8]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
