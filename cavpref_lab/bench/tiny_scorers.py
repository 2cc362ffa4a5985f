"""Do the trained tiny scorers mean something? Held-out test clips only, through the real scorer path.

    cavpref world --out world
    cavpref prep --world world --output_dir data --tasks MVIT MAIT MVT MAT --formats arrow
    cavpref model tiny-clap --world world --out scorers/clap
    cavpref model tiny-clip --world world --out scorers/clip
    python scripts/bench_tiny_scorers.py --world world --data data --clap scorers/clap --clip scorers/clip

Prints one table, measured value next to its target:
- zero-shot retrieval top-1 over the world's label set (20 names): the clip's top label (CLIP: mean of its
  frames' embeddings; CLAP: mean over its 1-s windows, exactly ``ClipScorer`` / ``ClapScorer``) is one of the
  entities the clip shows (CLIP) / sounds (CLAP), on every test clip, and on the single-entity test clips;
- AVSM(clean) > AVSM(perturbed) on the MVIT / MAIT / MVT / MAT preference rows of the prep's test split
  (text-bridged T_sim over the label set): the anchor deltas that calibrate β_V / β_A.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from cavpref.data_prep.scoring import Scorers, ScoringConfig
from cavpref.data_prep.scoring.train_tiny import heard_labels, seen_labels, world_clips, world_labels
from cavpref.media.spec import clip as clip_spec
from cavpref.media.spec import to_json
from cavpref.parsing import parse_args

TARGET_TOP1, TARGET_AVSM = 80.0, 90.0


def retrieval(
    embeddings, text: np.ndarray, labels: list[str], truth: list[set[str]]
) -> tuple[float, float, int]:
    """(top-1 % over clips with a truth, top-1 % over single-entity clips, number of single-entity clips)."""
    hits, single = [], []
    for emb, want in zip(embeddings, truth):
        if emb is None or not want:
            continue
        top = labels[int(np.argmax(text @ emb))]
        hits.append(top in want)
        if len(want) == 1:
            single.append(top in want)
    return 100 * float(np.mean(hits)), 100 * float(np.mean(single)) if single else float("nan"), len(single)


@dataclass
class BenchArguments:
    world: str = field(default="", metadata={"help": "the synthetic world folder (cavpref world)"})
    data: str = field(default="", metadata={"help": "cavpref prep output of the same world (split_seed 0)"})
    clap: str = field(default="", metadata={"help": "trained tiny CLAP folder (cavpref model tiny-clap)"})
    clip: str = field(default="", metadata={"help": "trained tiny CLIP folder (cavpref model tiny-clip)"})
    split_seed: int = field(default=0, metadata={"help": "the prep split seed the clips were split with"})


def main(argv: list[str] | None = None) -> None:
    (args,) = parse_args(
        [BenchArguments], sys.argv[1:] if argv is None else argv, prog="scripts/bench_tiny_scorers.py"
    )
    missing = [k for k in ("world", "data", "clap", "clip") if not getattr(args, k)]
    if missing:
        raise SystemExit(f"scripts/bench_tiny_scorers.py: --{' --'.join(missing)} required")

    manifest = json.loads((Path(args.world) / "world.json").read_text())
    labels = world_labels(manifest)
    cfg = ScoringConfig(
        clap_model=args.clap, clip_model=args.clip, vocabulary=labels, num_frames=8, progress=False
    )
    scorers = Scorers(cfg, args.world)
    test = world_clips(args.world, "test", args.split_seed)
    media = [to_json(clip_spec(c["file"])) for c in test]

    clip_text = scorers.clip.embed_text(labels)
    clap_text = scorers.clap.embed_text(labels)
    v_top1, v_single, n_v = retrieval(
        scorers.clip.video_embeddings(media), clip_text, labels, [seen_labels(c) for c in test]
    )
    a_top1, a_single, n_a = retrieval(
        scorers.clap.audio_embeddings(media), clap_text, labels, [heard_labels(c) for c in test]
    )

    from datasets import load_from_disk

    rows = load_from_disk(str(Path(args.data) / "preferences"))["test"]
    test_files = {c["file"] for c in test}
    leaked = {f for ids in rows["source_ids"] for f in ids} - test_files
    if leaked:
        raise SystemExit(
            f"{args.data}: test rows use clips outside this split ({sorted(leaked)[:3]} ...): "
            f"prep with the same world and split_seed"
        )
    avsm = {}
    for task, anchor in (("MVIT", "visual"), ("MVT", "visual"), ("MAIT", "audio"), ("MAT", "audio")):
        sel = [r for r in rows if r["task"] == task and r[f"{anchor}_clean"]]
        clean = scorers.avsm.score([r[f"{anchor}_clean"] for r in sel], labels)
        pert = scorers.avsm.score([r[f"{anchor}_perturbed"] for r in sel], labels)
        pairs = {(r[f"{anchor}_clean"], r[f"{anchor}_perturbed"]) for r in sel}
        avsm[task] = (100 * float(np.mean(clean > pert)), len(sel), len(pairs), float(np.mean(clean - pert)))

    print(f"held-out test clips: {len(test)} (split_seed {args.split_seed}); label set: {len(labels)} names")
    print("| measure (test split) | measured | target | n |")
    print("|---|---|---|---|")
    print(
        f"| CLIP zero-shot top-1 (a seen entity), all clips | {v_top1:.1f} % | >= {TARGET_TOP1:.0f} % | {len(test)} |"
    )
    print(f"| CLIP zero-shot top-1, single-entity clips | {v_single:.1f} % | – | {n_v} |")
    print(
        f"| CLAP zero-shot top-1 (a sounding entity), all clips | {a_top1:.1f} % | >= {TARGET_TOP1:.0f} % | "
        f"{len(test)} |"
    )
    print(f"| CLAP zero-shot top-1, single-entity clips | {a_single:.1f} % | – | {n_a} |")
    for task, (pct, n, pairs, delta) in avsm.items():
        print(
            f"| AVSM(clean) > AVSM(perturbed), {task} rows (mean delta {delta:.3f}) | {pct:.1f} % | "
            f">= {TARGET_AVSM:.0f} % | {n} rows, {pairs} distinct pairs |"
        )


if __name__ == "__main__":
    main()
