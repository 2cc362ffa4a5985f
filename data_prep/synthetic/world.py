"""Generate the synthetic world: clips (mp4, H.264 + AAC), annotations in the released formats, world.json.

Every clip draws from its own generators, seeded by (seed, source, clip index, purpose), so a clip does not
change when other knobs add or remove clips, and its media do not change when question sampling does.
"""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import shutil
from concurrent.futures import Executor, ProcessPoolExecutor
from contextlib import nullcontext
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from cavpref.media.write import write_mp4
from cavpref.output_dir import output_dir

from . import avqa_questions, music_questions
from .catalogue import (
    INSTRUMENT_BY_NAME,
    INSTRUMENTS,
    ONTOLOGY_BY_MID,
    SLOTS,
    SOURCE_BY_NAME,
    SOURCES,
    segment_labels,
    supercategory,
)
from .config import SOURCES as SOURCE_NAMES
from .config import WORLD_VERSION, WorldConfig
from .formats import music_record, write_audioset, write_avqa, write_music_avqa
from .scenes import assign_splits, audioset_clip, avqa_clip, music_clip, youtube_id
from .sounds import entity_sound, mix
from .visuals import Placed, render

MUSIC_SPLITS = {"train": 0.7, "val": 0.1, "test": 0.2}
AVQA_SPLITS = {"train": 0.8, "val": 0.2}
AUDIOSET_SPLITS = {"balanced_train": 0.75, "eval": 0.25}
_PURPOSE = {"truth": 0, "audio": 1, "questions": 2}


def _rng(cfg: WorldConfig, source: str, index: int, purpose: str) -> np.random.Generator:
    return np.random.default_rng([cfg.seed, SOURCE_NAMES.index(source), index, _PURPOSE[purpose]])


def _entity(name: str):
    return INSTRUMENT_BY_NAME.get(name) or SOURCE_BY_NAME[name]


def _write_clip(
    cfg: WorldConfig, path: str, scene: str, entities: list[dict[str, Any]], rng: np.random.Generator
) -> None:
    """Render ``entities`` (visible ones on screen, all of them in the mix) over ``scene`` to ``path``."""
    placed = [
        Placed(_entity(e["name"]).color, _entity(e["name"]).shape, SLOTS.index(e["slot"]), e["events"])
        for e in entities
        if e["visible"]
    ]
    frames = render(scene, placed, cfg.duration, cfg.fps, **cfg.look())
    n = round(cfg.duration * cfg.sample_rate)
    parts = [
        (entity_sound(_entity(e["name"]), e["events"], n, cfg.sample_rate, rng), e["gain"]) for e in entities
    ]
    write_mp4(path, frames, cfg.fps, mix(parts, n), cfg.sample_rate)


def _clips(ex: Executor | None, cfg: WorldConfig, source: str, job, args: list[tuple]) -> list:
    """Run ``job(cfg, *a)`` for every clip (in ``ex``'s worker processes if given); results in clip order."""
    bar = {"desc": source, "unit": "clip", "total": len(args)}
    if ex is None or len(args) < 2:
        return [job(cfg, *a) for a in tqdm(args, **bar)]
    return list(tqdm(ex.map(job, [cfg] * len(args), *zip(*args)), **bar))


def _quirk(content: str, k: int) -> str:
    """Released-data quirks on a fixed schedule (every corpus of >= 48 questions has each of them):
    a full-width question mark, or a trailing space."""
    if k % 23 == 7 and content.endswith("?"):
        return content[:-1] + "\uff1f"
    if k % 31 == 11:
        return content + " "
    return content


def _music_clip(cfg: WorldConfig, i: int, vid: str, split: str, names: list[str]) -> tuple[dict, list]:
    truth = {
        "video_id": vid,
        "split": split,
        "file": f"music_avqa/videos/{vid}.mp4",
        **music_clip(_rng(cfg, "music_avqa", i, "truth"), names, cfg.duration, cfg.level_ratio),
    }
    _write_clip(
        cfg,
        os.path.join(cfg.out, truth["file"]),
        truth["scene"],
        truth["instruments"],
        _rng(cfg, "music_avqa", i, "audio"),
    )
    questions = music_questions.clip_questions(
        truth, names, cfg.questions_per_clip, _rng(cfg, "music_avqa", i, "questions")
    )
    return truth, questions


def _music(ex: Executor | None, cfg: WorldConfig, id_rng: np.random.Generator) -> tuple[list, dict]:
    n = cfg.clips("music_avqa")
    names = [i.name for i in INSTRUMENTS[: cfg.num_instruments]]
    ids = sorted(id_rng.choice(np.arange(1, max(10000, 4 * n)), n, replace=False).tolist())
    splits = assign_splits(n, MUSIC_SPLITS)
    args = [(i, f"{ids[i]:08d}", splits[i], names) for i in range(n)]
    made = _clips(ex, cfg, "music_avqa", _music_clip, args)
    records: dict[str, list] = {s: [] for s in MUSIC_SPLITS}
    qid = k = 0
    for truth, questions in made:
        for q in questions:
            content = _quirk(q["content"], k)
            qid = qid if k % 47 == 5 else qid + 1  # question_id is not unique in the released files
            records[truth["split"]].append(
                music_record(
                    truth["video_id"], qid, q["modality"], q["type"], content, q["values"], q["answer"]
                )
            )
            k += 1
    write_music_avqa(os.path.join(cfg.out, "music_avqa"), records)
    return [t for t, _ in made], {"videos": n, "questions": {s: len(r) for s, r in records.items()}}


def _avqa_clip(cfg: WorldConfig, i: int, split: str) -> tuple[dict, list]:
    rng = _rng(cfg, "avqa", i, "truth")
    name = f"{youtube_id(rng)}_{int(rng.integers(0, 300)):06d}"
    truth = {
        "video_name": name,
        "video_id": i + 1,
        "split": split,
        "file": f"avqa/videos/{name}.mp4",
        **avqa_clip(rng, cfg.duration),
    }
    _write_clip(
        cfg,
        os.path.join(cfg.out, truth["file"]),
        truth["scene"],
        truth["sources"],
        _rng(cfg, "avqa", i, "audio"),
    )
    return truth, avqa_questions.clip_questions(
        truth, cfg.questions_per_clip, _rng(cfg, "avqa", i, "questions")
    )


def _avqa(ex: Executor | None, cfg: WorldConfig) -> tuple[list, dict]:
    n = cfg.clips("avqa")
    splits = assign_splits(n, AVQA_SPLITS)
    made = _clips(ex, cfg, "avqa", _avqa_clip, [(i, splits[i]) for i in range(n)])
    names = [t["video_name"] for t, _ in made]
    if len(set(names)) != n:
        raise RuntimeError(f"AVQA video names collide (seed {cfg.seed}); use another seed")
    records: dict[str, list] = {s: [] for s in AVQA_SPLITS}
    qid = 0
    for truth, questions in made:
        for q in questions:
            qid += 1
            records[truth["split"]].append(
                {
                    "id": qid,
                    "video_name": truth["video_name"],
                    "video_id": truth["video_id"],
                    "question_text": q["question_text"],
                    "multi_choice": q["multi_choice"],
                    "answer": q["answer"],
                    "question_relation": q["question_relation"],
                    "question_type": q["question_type"],
                }
            )
    write_avqa(os.path.join(cfg.out, "avqa"), records, {t["video_name"]: t["video_id"] for t, _ in made})
    return [t for t, _ in made], {"videos": n, "questions": {s: len(r) for s, r in records.items()}}


def audioset_classes(num_instruments: int) -> list[dict[str, str]]:
    """The AudioSet classes that have clips: every sound source, and the world's instruments that have
    an AudioSet class. Each is (event mid, display name, entity, supercategory)."""
    ents = list(SOURCES) + [i for i in INSTRUMENTS[:num_instruments] if i.audioset]
    return [
        {
            "mid": e.audioset,
            "name": ONTOLOGY_BY_MID[e.audioset][1],
            "entity": e.name,
            "supercategory": supercategory(e.audioset),
        }
        for e in ents
    ]


def _audioset_clip(cfg: WorldConfig, i: int, split: str, cls: dict[str, str]) -> dict:
    rng = _rng(cfg, "audioset", i, "truth")
    ytid, start = youtube_id(rng), int(rng.integers(0, 30)) * 10
    truth = {
        "ytid": ytid,
        "start_seconds": float(start),
        "end_seconds": round(start + cfg.duration, 3),
        "split": split,
        "file": f"audioset/clips/{ytid}_{start:d}.mp4",
        "event": cls["mid"],
        "event_name": cls["name"],
        "supercategory": cls["supercategory"],
        "labels": segment_labels(cls["mid"]),
        **audioset_clip(rng, cls["entity"], cfg.duration),
    }
    _write_clip(
        cfg,
        os.path.join(cfg.out, truth["file"]),
        truth["scene"],
        truth["sources"],
        _rng(cfg, "audioset", i, "audio"),
    )
    return truth


def _audioset(ex: Executor | None, cfg: WorldConfig) -> tuple[list, dict]:
    n = cfg.clips("audioset")
    classes = audioset_classes(cfg.num_instruments)
    splits = assign_splits(n, AUDIOSET_SPLITS)
    # balanced: the classes take turns
    truths = _clips(
        ex, cfg, "audioset", _audioset_clip, [(i, splits[i], classes[i % len(classes)]) for i in range(n)]
    )
    if len({t["ytid"] for t in truths}) != n:
        raise RuntimeError(f"AudioSet YTIDs collide (seed {cfg.seed}); use another seed")
    rows: dict[str, list] = {s: [] for s in AUDIOSET_SPLITS}
    positives: dict[str, list[str]] = {}
    for t in truths:
        rows[t["split"]].append((t["ytid"], t["start_seconds"], t["end_seconds"], t["labels"]))
        if t["split"] == "balanced_train" and len(positives.setdefault(t["event"], [])) < 3:
            positives[t["event"]].append(
                f"youtu.be/{t['ytid']}?start={t['start_seconds']:g}&end={t['end_seconds']:g}"
            )
    descriptions = {}
    for c in classes:
        e = _entity(c["entity"])
        descriptions[c["mid"]] = (
            f"{c['name']} (synthetic world): a {e.shape} of colour {list(e.color)} "
            f"that sounds like the world's {c['entity']}."
        )
    write_audioset(os.path.join(cfg.out, "audioset"), rows, cfg.seed, descriptions, positives)
    return truths, {
        "clips": n,
        "segments": {s: len(r) for s, r in rows.items()},
        "classes": len(classes),
        "ontology_nodes": len(ONTOLOGY_BY_MID),
    }


def _prepare(out: str) -> None:
    """Remove a previous world from ``out`` (a folder ``generate_world`` has claimed: its own, or one the
    user asked it to overwrite)."""
    for name in SOURCE_NAMES:
        shutil.rmtree(os.path.join(out, name), ignore_errors=True)
    if os.path.isfile(os.path.join(out, "world.json")):
        os.remove(os.path.join(out, "world.json"))


def catalogue(cfg: WorldConfig) -> dict[str, Any]:
    return {
        "instruments": [
            {
                "name": i.name,
                "color": list(i.color),
                "shape": i.shape,
                "f0": i.f0,
                "harmonics": list(i.harmonics),
                "rhythm_hz": i.rhythm_hz,
                "audioset": i.audioset,
            }
            for i in INSTRUMENTS[: cfg.num_instruments]
        ],
        "sources": [
            {
                "name": s.name,
                "color": list(s.color),
                "shape": s.shape,
                "sound": s.sound,
                "event": s.event,
                "used_for": s.used_for,
                "why": s.why,
                "audioset": s.audioset,
            }
            for s in SOURCES
        ],
        "audioset_classes": audioset_classes(cfg.num_instruments),
    }


def generate_world(cfg: WorldConfig) -> dict[str, Any]:
    """Write the whole world under ``cfg.out`` and return the manifest (also saved as world.json)."""
    cfg.validate()
    # never a folder of the user's (cavpref.output_dir): a previous world in it is replaced, nothing else
    with output_dir(
        cfg.out, "world", overwrite=cfg.overwrite_output_dir, markers=("world.json",), key="out"
    ) as out:
        return _generate(dataclasses.replace(cfg, out=out))


def _generate(cfg: WorldConfig) -> dict[str, Any]:
    _prepare(cfg.out)
    workers = cfg.workers or min(4, os.cpu_count() or 1)
    # spawn, not fork: the parent may hold threads (torch, tokenizers) that a forked child would inherit
    spawn = multiprocessing.get_context("spawn")
    from cavpref.safety import die_with_parent  # workers end with this process, even after kill -9

    pool = dict(mp_context=spawn, initializer=die_with_parent, initargs=(os.getpid(),))
    with ProcessPoolExecutor(workers, **pool) if workers > 1 else nullcontext() as ex:
        music, music_files = _music(ex, cfg, np.random.default_rng([cfg.seed, 99]))
        avqa, avqa_files = _avqa(ex, cfg)
        audioset, audioset_files = _audioset(ex, cfg)
    manifest = {
        "version": WORLD_VERSION,
        "seed": cfg.seed,
        "config": cfg.knobs(),
        "geometry": {**cfg.geometry(), "slots": list(SLOTS)},
        "catalogue": catalogue(cfg),
        "files": {"music_avqa": music_files, "avqa": avqa_files, "audioset": audioset_files},
        "music_avqa": music,
        "avqa": avqa,
        "audioset": audioset,
    }
    with open(os.path.join(cfg.out, "world.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return manifest
