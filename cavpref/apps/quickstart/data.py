"""The quickstart's data transforms: ground-truth clip captions, the starting model's SFT rows and the
train / test clip split.

Training rows are shown under CircularEval rotations by prep itself (``PrepConfig.rotate_options``, on by
default, for the preference rows; ``circular_sft_rows`` for the SFT rows), so no letter is special in
training: the evaluator rotates the options (and "None of the above") on every pass.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from datasets import Dataset, load_from_disk

from cavpref.apps.quickstart.config import CAPTION_PLACES, CAPTION_SEE, QuickstartConfig
from cavpref.apps.quickstart.stages import Stage
from cavpref.data import CLEAN_TASK
from cavpref.data_prep.build.rotation import circular_sft_rows
from cavpref.data_prep.tasks import item_prompt
from cavpref.eval.benchmarks.avtrustbench.reader import load_items
from cavpref.media.spec import clip as clip_spec
from cavpref.media.spec import drop_video, mute, to_json
from cavpref.prompts import rotate_response, rotated_view, rotation_for


def corpus(data: Path) -> list[str]:
    """The training split's own text (prompts, chosen and rejected answers) as drawn, before prep's rotation:
    the tiny tokenizer learns whole words for it, so an answer is a few tokens and copying an option's text
    is a short, learnable step. A rotation only reorders option lines and letters (the same words), and
    reading the rows as drawn keeps the tokenizer -- and every number measured with it -- independent of
    ``rotate_options``."""
    rows = load_from_disk(str(data / "preferences"))["train"]
    config = json.loads((data / "manifest.json").read_text())["config"]
    if not config.get("rotate_options"):
        return sorted({t for col in ("prompt", "chosen", "rejected") for t in rows[col] if t})
    items = {i.id: i for i in load_items(data, split="train").items}
    texts = set()
    for row in rows:
        item = items[row["id"]]
        _, new_of, _ = rotated_view(item, rotation_for(config["seed"], row["id"], item.options))
        old_of = {new: old for old, new in new_of.items()}
        texts |= {item_prompt(item), *(rotate_response(row[c], old_of) for c in ("chosen", "rejected"))}
    return sorted(t for t in texts if t)


SLOT_ORDER = {"left": 0, "middle": 1, "right": 2}


def _name(entity: dict) -> str:
    return str(entity["name"]).replace("_", " ").capitalize()


def clip_captions(clip: dict, places: str = "phrase", see: str = "names") -> list[tuple[str, str]]:
    """(prompt, response) pairs that describe one clip from the world's ground truth: what is seen (left to
    right), what is heard (by onset) and who is sounding where. They stand in for the audio-visual
    pretraining a real AVLLM has before the paper's "zero-shot" evaluation: without them a randomly
    initialised thinker learns the clean questions' text priors and ignores both streams (measured).

    ``places`` words the place of each sounding entity: ``"phrase"`` "Violin on the left, Drum in the
    middle" (the preposition already says whether it is the middle, so it is the token that must be read
    from the video), ``"label"`` "Violin: left, Drum: middle" (the place word itself is that token), both in
    order of onset. ``see`` words what is seen: ``"names"`` "Violin, Drum" (left to right), ``"slots"``
    "left: Violin, middle: Drum" (the column word before each name)."""
    if places not in CAPTION_PLACES:
        raise ValueError(f"places must be one of {CAPTION_PLACES}, got {places!r}")
    if see not in CAPTION_SEE:
        raise ValueError(f"see must be one of {CAPTION_SEE}, got {see!r}")
    entities = clip.get("instruments") or clip.get("sources") or []
    seen = sorted(
        (e for e in entities if e.get("visible") and e.get("slot")), key=lambda e: SLOT_ORDER[e["slot"]]
    )
    heard = sorted(
        (e for e in entities if e.get("sounding")),
        key=lambda e: (e["first_onset"], SLOT_ORDER.get(e.get("slot"), 3)),
    )

    def place(e: dict) -> str:
        on_screen = e.get("visible") and e.get("slot")
        if places == "label":
            return f": {e['slot'] if on_screen else 'off screen'}"
        return " " + (_slot_phrase(e["slot"]) if on_screen else "off screen")

    seen_names = [f"{e['slot']}: {_name(e)}" if see == "slots" else _name(e) for e in seen]
    return [
        ("What do you see, from left to right?", ", ".join(seen_names) or "Nothing"),
        ("What do you hear, in order of onset?", ", ".join(_name(e) for e in heard) or "Nothing"),
        (
            "Which objects are sounding, and where?",
            ", ".join(f"{_name(e)}{place(e)}" for e in heard) or "Nothing",
        ),
    ]


def _slot_phrase(slot: str) -> str:
    return "in the middle" if slot == "middle" else f"on the {slot}"


def split_clips(data: Path) -> tuple[set[str], set[str]]:
    """(train, test) source clip files of the prep output (the split is by source clip, so they are disjoint)."""
    prefs = load_from_disk(str(data / "preferences"))
    test = {f for ids in prefs["test"]["source_ids"] for f in ids}
    return {f for ids in prefs["train"]["source_ids"] for f in ids} - test, test


def probe_clips(folders: dict[str, str], which: str = "test") -> tuple[Path, list[dict]]:
    """(world folder, clips) a probe of the start runs on, from a run's ``stage_folders``: the run's ``test`` or
    ``train`` clips (the prep split, by source clip), or every 20th clip of the caption world (sorted by file),
    which the captions-only stage trained on."""
    if which not in ("test", "train", "caption_world"):
        raise ValueError(f"probe clips: unknown {which!r}; choose from test, train, caption_world")
    world = Path(folders["caption_world" if which == "caption_world" else "world"])
    manifest = json.loads((world / "world.json").read_text())
    every = [c for src in ("music_avqa", "avqa", "audioset") for c in manifest.get(src, [])]
    if which == "caption_world":
        return world, sorted(every, key=lambda c: c["file"])[::20]
    train, test = split_clips(Path(folders["data"]))
    keep = test if which == "test" else train
    return world, [c for c in every if c["file"] in keep]


class Removal(NamedTuple):
    """A stream removed from a caption row: the media transform, the row id's tag, and which of
    ``clip_captions``' three (see, hear, where) is still asked -- what is seen without the audio, what is heard
    without the video (the probes ask the same of the test clips)."""

    transform: Callable
    tag: str
    asked: slice


CAPTION_PROBES = ("see", "hear", "where")  # clip_captions' pairs, in order
WITHOUT = {
    None: Removal(lambda spec: spec, "", slice(0, 3)),
    "audio": Removal(mute, "muted:", slice(0, 1)),
    "video": Removal(drop_video, "blind:", slice(1, 2)),
}


def _caption_rows(
    clip: dict, source: str, pairs: list[tuple[str, str]], features, drop: str | None = None
) -> list[dict]:
    """One SFT row (CLEAN's schema, every other column None) per (prompt, response) pair about ``clip``
    (``drop``: ``"audio"`` the clip without its audio, ``"video"`` without its video)."""
    without, tag, _ = WITHOUT[drop]
    rows, media = [], to_json(without(clip_spec(clip["file"])))
    for k, (prompt, response) in enumerate(pairs):
        row = {name: None for name in features}
        row.update(
            id=f"caption:{clip['file']}:{tag}{k}",
            task=CLEAN_TASK,
            source=source,
            category="Existential",
            prompt=prompt,
            media=media,
            chosen=response,
            rejected="Nothing" if response != "Nothing" else "Something",
            source_ids=[clip["file"]],
        )
        rows.append(row)
    return rows


def start_data(cfg: QuickstartConfig, stage: Stage, world: Path, data: Path) -> None:
    """The starting model's SFT data: every CircularEval view of CLEAN's train items (prep's
    ``circular_sft_rows``: without them the starting model learns letter priors, CLEAN CircularEval was 0 %
    even by option likelihood, 78.8 % vanilla; with them 70.6 % circular / 78.1 % vanilla on all 146 CLEAN
    test items) plus
    ``clip_captions`` of every *train* clip, ``cfg.caption_repeats`` times (a clip of the test split never
    appears: the split is by source clip). The captions are the only rows that name every entity on screen
    (left to right) and every one heard, so their share of the SFT data sets how much of the start's
    training teaches it to perceive (measured: docs/lab/quickstart_start.md)."""
    train_files, _ = split_clips(data)
    features = load_from_disk(str(data / "preferences"))["train"].features
    clean = circular_sft_rows(
        load_items(data, split="train", keep=lambda it: it.task == CLEAN_TASK).items, list(features)
    )
    manifest = json.loads((world / "world.json").read_text())
    rows = []
    for source in ("music_avqa", "avqa", "audioset"):
        for clip in manifest.get(source, []):
            if clip["file"] not in train_files:
                continue
            captions = clip_captions(clip, cfg.caption_places, cfg.caption_see)
            rows += _caption_rows(clip, source, captions * cfg.caption_repeats, features)
    if not rows:
        raise RuntimeError(f"no train clips of {world / 'world.json'} in {data / 'preferences'}")
    Dataset.from_list(clean + rows, features=features).shuffle(seed=cfg.seed).save_to_disk(
        str(stage.dir / "train")
    )
    stage.finish(clean=len(clean), captions=len(rows), clips=len(train_files))


def caption_data(cfg: QuickstartConfig, stage: Stage, caption_world: Path, data: Path) -> None:
    """The captions-only stage's SFT data: ``clip_captions`` of *every* clip of the caption world, a second
    world drawn with another seed (``caption_world_stage``). It stands in for the captioned clips a real
    AVLLM is pretrained on: the same entities, scenes and sounds as the benchmark's world, never its clips,
    so nothing of the benchmark's test split (or its questions) is seen. The run's own 235 train clips were
    learnt by heart (caption probe 100 % on train clips, 62 % on test clips after 1000 captions-only steps:
    docs/lab/quickstart_start.md); on the caption world's clips the same stage fits its own train captions no
    better than held-out ones, so more distinct clips trade learning by heart for learning to perceive."""
    features = load_from_disk(str(data / "preferences"))["train"].features
    manifest = json.loads((caption_world / "world.json").read_text())
    rows, clips = [], 0
    for source in ("music_avqa", "avqa", "audioset"):
        for clip in manifest.get(source, []):
            clips += 1
            captions = clip_captions(clip, cfg.caption_places, cfg.caption_see)
            rows += _caption_rows(clip, source, captions, features)
            rows += _caption_rows(
                clip, source, captions[WITHOUT["audio"].asked] * cfg.muted_see, features, drop="audio"
            )
            rows += _caption_rows(
                clip, source, captions[WITHOUT["video"].asked] * cfg.blind_hear, features, drop="video"
            )
    if not rows:
        raise RuntimeError(f"no clips in {caption_world / 'world.json'}")
    Dataset.from_list(rows, features=features).shuffle(seed=cfg.seed).save_to_disk(str(stage.dir / "train"))
    stage.finish(captions=len(rows), clips=clips)
