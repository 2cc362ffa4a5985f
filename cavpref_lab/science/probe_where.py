"""Why does a start not know *where*? Three probes of one checkpoint of a ``bench_start_perception.py`` run.

    OMP_NUM_THREADS=1 python scripts/probe_where.py --run runs/p/default --model start_captions

1. **Slot tokens**: one entity alone on a scene, drawn in the left, middle and right slot (the world's own
   renderer, the run's world keys, resized as the pipeline decodes), through the checkpoint's vision
   tower; the cosine similarity of the merged token holding the entity, between slots. Qwen2.5-Omni's tower has
   no absolute position embedding (2-D RoPE only): ~1.0 means its output does not say where the entity is.
2. **Place tokens, teacher-forced**: the "which objects are sounding, and where?" caption of clips with the
   true answer as input; how often the next-token argmax is the true place word ("in" / "on" / "off",
   "left" / "middle" / "right"). It separates a model that never learnt the places from one that knows them
   and loses them in greedy decoding.
3. **One-entity clips, by slot**: on the test clips with one visible entity, which is the one sounding
   ("<name> in the middle" / "on the left" / "on the right"), the greedy answers that equal the caption, the
   teacher-forced probability of " in" at the preposition and of " left" / " middle" / " right" at the slot
   word, averaged per true slot; and the same slot-word probabilities with the preposition swapped (" in" <-> " on"). A model that reads the place gives
   " in" ~1 for the middle and ~0 elsewhere; a model that uses its own preposition moves the slot word when it
   is swapped (" on the" is never followed by " middle" in training).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from cavpref.apps.quickstart import QuickstartConfig, clip_captions, probe_clips, stage_folders
from cavpref.data_prep.synthetic import WorldConfig
from cavpref.data_prep.synthetic.catalogue import INSTRUMENTS, SLOTS
from cavpref.data_prep.synthetic.visuals import Placed, render
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
    model: str = field(
        default="start_captions",
        metadata={
            "help": "the checkpoint's folder in --run: a stage (start_captions, start) or a checkpoint in one "
            "(start_captions/checkpoint-1000)"
        },
    )
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
    # the quickstart's worlds are drawn at WorldConfig's frame size, with the run's world keys
    proc, sims, world = io.processor, [], WorldConfig(**cfg.world_keys())
    centres = world.geometry()["centers_x"]
    for inst in INSTRUMENTS[:8]:
        tokens = []
        for slot in range(len(SLOTS)):
            placed = [Placed(inst.color, inst.shape, slot, [])]
            frames = render("outdoor", placed, 1.0, 4.0, **world.look())
            frames = resize_frames(frames, (cfg.frame_size, cfg.frame_size))
            pixels = cfg.frame_size * cfg.frame_size
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
            column = min(w // 2 - 1, int(centres[slot] / world.width * (w // 2)))
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
    world, chosen = probe_clips(folders, which)
    chosen = chosen[:n]
    policy = FramePolicy(num_frames=cfg.num_frames, size=(cfg.frame_size, cfg.frame_size))
    tok, right, total, prob, shown = io.tokenizer, 0, 0, 0.0, []
    for c in chosen:
        prompt, truth = clip_captions(c, cfg.caption_places)[2]
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


def one_entity_places(io, cfg: QuickstartConfig, folders: dict) -> dict[str, dict]:
    """{true slot: {"clips", "greedy_right", "p_in", "slot", "slot_swapped"}} over the test clips whose one visible
    entity is the one sounding (``greedy_right``: greedy answers equal to the caption; probabilities
    teacher-forced, averaged; ``slot`` / ``slot_swapped``: P(left, middle, right) at the slot word after the true
    / the swapped preposition). Captions worded ``--caption_places label`` ("Violin: middle") have no
    preposition: ``p_in`` and ``slot_swapped`` are None."""
    world, test_clips = probe_clips(folders, "test")
    policy = FramePolicy(num_frames=cfg.num_frames, size=(cfg.frame_size, cfg.frame_size))
    tok = io.tokenizer
    word = {w: tok.encode(" " + w, add_special_tokens=False)[0] for w in ("in", "on", *SLOTS)}
    swap = {word["in"]: word["on"], word["on"]: word["in"]}
    phrase = cfg.caption_places == "phrase"
    out: dict[str, dict] = {}
    for c in test_clips:
        seen = [e for e in (c.get("instruments") or c.get("sources") or []) if e.get("visible")]
        if len(seen) != 1 or not seen[0].get("sounding") or not seen[0].get("slot"):
            continue
        prompt, truth = clip_captions(c, cfg.caption_places)[2]
        media = decode(to_json(clip(c["file"])), str(world), frames=policy)
        batch = io.collate([Row(prompt, truth, media, c["file"], c["file"])])
        ids = batch["input_ids"][0]
        at = (batch["labels"][0] != -100).nonzero().flatten().tolist()
        slot_at = next(a for a in at if int(ids[a]) in {word[w] for w in SLOTS})
        batches = [batch]
        if phrase:  # "<name> in the middle": the preposition two tokens before the slot word
            swapped = dict(batch, input_ids=batch["input_ids"].clone())
            swapped["input_ids"][0, slot_at - 2] = swap[int(ids[slot_at - 2])]
            batches.append(swapped)
        with torch.no_grad():
            probs = [io.forward_logits(io.model, b)[0].softmax(-1) for b in batches]
        rec = out.setdefault(
            seen[0]["slot"],
            {"clips": 0, "greedy_right": 0, "p_in": 0.0, "slot": [0.0] * 3, "slot_swapped": [0.0] * 3},
        )
        rec["clips"] += 1
        answer = io.generate(io.model, [Row(prompt, "", media, c["file"], c["file"])], max_new_tokens=24)[0]
        rec["greedy_right"] += answer.strip() == truth
        if phrase:
            rec["p_in"] += float(probs[0][slot_at - 3, word["in"]])
        for key, pr in zip(("slot", "slot_swapped"), probs):
            rec[key] = [a + float(pr[slot_at - 1, word[w]]) for a, w in zip(rec[key], SLOTS)]
    for rec in out.values():
        n = rec["clips"]
        rec["p_in"] = round(rec["p_in"] / n, 3) if phrase else None
        rec["slot"], rec["slot_swapped"] = (
            [round(v / n, 3) for v in rec[k]] if phrase or k == "slot" else None
            for k in ("slot", "slot_swapped")
        )
    return dict(sorted(out.items(), key=lambda kv: SLOTS.index(kv[0])))


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
        frame_width=cfg.frame_size,
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
    print(
        "\n| one-entity test clips, true slot | clips | greedy answer right | P(' in') at the preposition | "
        "P(left, middle, right) at the slot word | the same, preposition swapped |\n|---|---|---|---|---|---|"
    )
    for slot, rec in one_entity_places(io, cfg, stage_folders(run)).items():
        print(
            f"| {slot} | {rec['clips']} | {rec['greedy_right']} | {rec['p_in']} | {rec['slot']} | "
            f"{rec['slot_swapped']} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
