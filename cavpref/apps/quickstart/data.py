"""The quickstart's data transforms: CircularEval-rotated training rows, ground-truth clip captions, and the
train / test clip split.

Training rows are shown under CircularEval rotations (``rotated_rows``, ``rotated_preferences``), so no
letter is special in training: the evaluator rotates the options (and "None of the above") on every pass.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from datasets import Dataset, load_from_disk

from cavpref.apps.quickstart.config import QuickstartConfig
from cavpref.apps.quickstart.stages import Stage
from cavpref.data import CLEAN_TASK, NONE_OF_THE_ABOVE
from cavpref.eval.avtrustbench import format_prompt
from cavpref.eval.circular import n_passes, rotate
from cavpref.eval.loader import load_items
from cavpref.media.spec import clip as clip_spec
from cavpref.media.spec import to_json


def corpus(data: Path) -> list[str]:
    """The training split's own text (prompts, chosen and rejected answers): the tiny tokenizer learns whole
    words for it, so an answer is a few tokens and copying an option's text is a short, learnable step."""
    rows = load_from_disk(str(data / "preferences"))["train"]
    return sorted({t for col in ("prompt", "chosen", "rejected") for t in rows[col] if t})


SLOT_ORDER = {"left": 0, "middle": 1, "right": 2}


def _name(entity: dict) -> str:
    return str(entity["name"]).replace("_", " ").capitalize()


def clip_captions(clip: dict) -> list[tuple[str, str]]:
    """(prompt, response) pairs that describe one clip from the world's ground truth: what is seen (left to
    right), what is heard (by onset) and who is sounding where. They stand in for the audio-visual
    pretraining a real AVLLM has before the paper's "zero-shot" evaluation: without them a randomly
    initialised thinker learns the clean questions' text priors and ignores both streams (measured)."""
    entities = clip.get("instruments") or clip.get("sources") or []
    seen = sorted((e for e in entities if e.get("visible") and e.get("slot")), key=lambda e: SLOT_ORDER[e["slot"]])
    heard = sorted((e for e in entities if e.get("sounding")),
                   key=lambda e: (e["first_onset"], SLOT_ORDER.get(e.get("slot"), 3)))
    def place(e: dict) -> str:
        if not (e.get("visible") and e.get("slot")):
            return "off screen"
        return "in the middle" if e["slot"] == "middle" else f"on the {e['slot']}"

    where = [f"{_name(e)} {place(e)}" for e in heard]
    return [("What do you see, from left to right?", ", ".join(_name(e) for e in seen) or "Nothing"),
            ("What do you hear, in order of onset?", ", ".join(_name(e) for e in heard) or "Nothing"),
            ("Which objects are sounding, and where?", ", ".join(where) or "Nothing")]


def rotated_view(item, k: int) -> tuple[dict[str, str], dict[str, str], str]:
    """Pass ``k`` of CircularEval for one item, exactly as the evaluator shows it: the rotated options, the
    map old letter -> new letter, and the prompt ("None of the above" rotates too, as in the evaluation)."""
    options, new_of = rotate(item.options, k)
    abstain = None if item.abstain_letter is None else new_of[item.abstain_letter]
    return options, new_of, format_prompt(item, options, abstain)


def rotated_rows(items, columns: list[str]) -> list[dict]:
    """One SFT row per CircularEval view of every item, the chosen response naming the correct option at its
    new letter.

    Without it the starting model only ever sees "None of the above" last and the answers at their drawn
    letters, learns letter priors, and fails the rotations: CLEAN CircularEval was 0 % even by option
    likelihood (78.8 % vanilla); with it, 70.6 % circular / 78.1 % vanilla on all 146 CLEAN test items."""
    rows = []
    for item in items:
        for k in range(n_passes(item.options)):
            options, new_of, prompt = rotated_view(item, k)
            answer = new_of[item.answer]
            wrong = next(x for x in options if x != answer and options[x] != NONE_OF_THE_ABOVE)
            row = {name: None for name in columns}
            row.update(id=f"{item.id}:rot{k}", task=item.task, source=item.source, category=item.category,
                       prompt=prompt, media=item.media, chosen=f"{answer}. {options[answer]}",
                       rejected=f"{wrong}. {options[wrong]}", source_ids=list(item.source_ids))
            rows.append(row)
    return rows


def rotate_response(response: str | None, new_of: dict[str, str]) -> str | None:
    """A response under rotated options: "B. Piano" -> "<new letter of B>. Piano"; abstention sentences
    (and None) are unchanged."""
    letter, dot, text = (response or "").partition(". ")
    return f"{new_of[letter]}. {text}" if dot and letter in new_of else response


def rotated_preferences(cfg: QuickstartConfig, stage: Stage, data: Path) -> None:
    """The Table-5 methods' training rows, each shown under one CircularEval rotation drawn from (seed, id):
    otherwise "None of the above" is always the last letter in training and a model can learn "abstain =
    the last letter" instead of "abstain = the option that says so", which every rotated pass punishes.
    Chosen, rejected and anchor responses follow their options to the new letters."""
    prefs = load_from_disk(str(data / "preferences"))
    items = {i.id: i for i in load_items(data, split="train").items}

    def rotate_row(row: dict) -> dict:
        item = items.get(row["id"])
        if item is None:
            raise ValueError(f"{data / 'preferences'}: train row {row['id']!r} has no benchmark item of that id "
                             f"under {data} (prep output from another run?)")
        k = random.Random(f"{cfg.seed}:{row['id']}").randrange(n_passes(item.options))
        _, new_of, row["prompt"] = rotated_view(item, k)
        for col in ("chosen", "rejected", "visual_response", "audio_response"):
            row[col] = rotate_response(row[col], new_of)
        return row

    prefs["train"] = prefs["train"].map(rotate_row, desc="rotating options")
    prefs.save_to_disk(str(stage.dir))
    stage.finish(rows=len(prefs["train"]))


def split_clips(data: Path) -> tuple[set[str], set[str]]:
    """(train, test) source clip files of the prep output (the split is by source clip, so they are disjoint)."""
    prefs = load_from_disk(str(data / "preferences"))
    test = {f for ids in prefs["test"]["source_ids"] for f in ids}
    return {f for ids in prefs["train"]["source_ids"] for f in ids} - test, test


def start_data(cfg: QuickstartConfig, stage: Stage, world: Path, data: Path) -> None:
    """The starting model's SFT data: every CircularEval view of CLEAN's train items (``rotated_rows``) plus
    ``clip_captions`` of every *train* clip (a clip of the test split never appears: the split is by source
    clip)."""
    train_files, _ = split_clips(data)
    features = load_from_disk(str(data / "preferences"))["train"].features
    clean = rotated_rows(load_items(data, split="train",
                                    keep=lambda it: it.task == CLEAN_TASK).items, list(features))
    manifest = json.loads((world / "world.json").read_text())
    rows = []
    for source in ("music_avqa", "avqa", "audioset"):
        for clip in manifest.get(source, []):
            if clip["file"] not in train_files:
                continue
            for k, (prompt, response) in enumerate(clip_captions(clip)):
                row = {name: None for name in features}
                row.update(id=f"caption:{clip['file']}:{k}", task=CLEAN_TASK, source=source, category="Existential",
                           prompt=prompt, media=to_json(clip_spec(clip["file"])), chosen=response,
                           rejected="Nothing" if response != "Nothing" else "Something", source_ids=[clip["file"]])
                rows.append(row)
    if not rows:
        raise RuntimeError(f"no train clips of {world / 'world.json'} in {data / 'preferences'}")
    Dataset.from_list(clean + rows, features=features).shuffle(seed=cfg.seed).save_to_disk(str(stage.dir / "train"))
    stage.finish(clean=len(clean), captions=len(rows), clips=len(train_files))
    Dataset.from_list(clean + rows, features=features).shuffle(seed=cfg.seed).save_to_disk(str(stage.dir / "train"))
    stage.finish(clean=len(clean), captions=len(rows), clips=len(train_files))
