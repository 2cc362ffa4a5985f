"""MVBench (OpenGVLab, "MVBench: A Comprehensive Multi-modal Video Understanding Benchmark"): 20 temporal
sub-tasks, multiple choice over short videos. Its released layout and the pure parts of scoring.

Released layout (``OpenGVLab/MVBench``, and the ``data_list`` of Ask-Anything's ``video_chat2/mvbench.ipynb``)::

    json/<sub_task>.json      a list of {"video": str, "question": str, "candidates": [str, ...],
                              "answer": str (one of the candidates), ["start": s, "end": s]}
    video/<folder>/<video>    the clips; the folder depends on the sub-task (``SUBTASKS``); four sub-tasks
                              carry a time bound (start / end seconds) and are cut to it; episodic_reasoning
                              is released as folders of JPEG frames (tvqa/frames_fps3_hq), not videos

Items have no ids in the release: ours is ``mvbench/<sub_task>/<index in its file>``. The clips are the
video stream only (MVBench is a visual benchmark; its evaluation feeds frames).

Scoring, two protocols. ``paper``: the project's strict step-1 extraction (``eval/extract.py``: exactly one
option letter, or one option's text) — anything else is unparsed and wrong. ``official``: the notebook's
``check_ans`` on the answer as the notebook forms it — "(" (its answer prompt ends "Best option:(") plus the
first line of the response — against "(X) <answer>": the first word of each, lower-cased, compared by
substring either way (so "(a" and "a)" count as A, and so does an empty response: the notebook's rule, kept).
Avg is correct / total over every item (the notebook's ``final_res['Avg']``); the per-sub-task accuracy
and their unweighted mean are reported beside it.
"""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

from cavpref.data import BenchmarkItem
from cavpref.eval.common import BenchmarkInputError, field, mean
from cavpref.media.spec import clip, mute

BENCHMARK = "mvbench"
# sub-task -> (video folder under video/, data type, has a time bound): the official data_list, in its order
SUBTASKS: dict[str, tuple[str, str, bool]] = {
    "action_sequence": ("star/Charades_v1_480", "video", True),
    "action_prediction": ("star/Charades_v1_480", "video", True),
    "action_antonym": ("ssv2_video", "video", False),
    "fine_grained_action": ("Moments_in_Time_Raw/videos", "video", False),
    "unexpected_action": ("FunQA_test/test", "video", False),
    "object_existence": ("clevrer/video_validation", "video", False),
    "object_interaction": ("star/Charades_v1_480", "video", True),
    "object_shuffle": ("perception/videos", "video", False),
    "moving_direction": ("clevrer/video_validation", "video", False),
    "action_localization": ("sta/sta_video", "video", True),
    "scene_transition": ("scene_qa/video", "video", False),
    "action_count": ("perception/videos", "video", False),
    "moving_count": ("clevrer/video_validation", "video", False),
    "moving_attribute": ("clevrer/video_validation", "video", False),
    "state_change": ("perception/videos", "video", False),
    "fine_grained_pose": ("nturgbd", "video", False),
    "character_order": ("perception/videos", "video", False),
    "egocentric_navigation": ("vlnqa", "video", False),
    "episodic_reasoning": ("tvqa/frames_fps3_hq", "frame", True),
    "counterfactual_inference": ("clevrer/video_validation", "video", False),
}
LETTERS = string.ascii_uppercase
SYSTEM = (
    "Carefully watch the video and pay attention to the cause and sequence of events, the detail and movement "
    "of objects, and the action and pose of persons. Based on your observations, select the best option that "
    "accurately addresses the question."
)


def json_files(data: str | Path) -> list[Path]:
    """The sub-task files of ``data``: a release folder (``json/`` inside), the ``json/`` folder, or one file."""
    path = Path(data)
    if path.is_file():
        return [path]
    folder = path / "json" if (path / "json").is_dir() else path
    files = sorted(p for p in folder.glob("*.json") if p.stem in SUBTASKS)
    if not files:
        raise BenchmarkInputError(
            path, "folder", None, f"no sub-task files named after {list(SUBTASKS)[:3]}…"
        )
    return files


def read(
    data: str | Path, *, folders: dict[str, str] | None = None, bounds: bool = True
) -> list[BenchmarkItem]:
    """Items of every sub-task file under ``data``. ``folders`` overrides a sub-task's video folder (other
    copies of the release lay the clips out differently); ``bounds=False`` ignores start / end (copies whose
    clips are already cut to them)."""
    items = []
    for path in json_files(data):
        task = path.stem
        folder, kind, bounded = SUBTASKS[task]
        folder = (folders or {}).get(task, f"video/{folder}")
        try:
            records = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as err:
            raise BenchmarkInputError(path, "file", None, f"cannot read ({err})") from None
        if not isinstance(records, list):
            raise BenchmarkInputError(
                path, "top level", None, f"expected a list, got {type(records).__name__}"
            )
        for n, rec in enumerate(records):
            items.append(_item(path, f"record {n}", rec, task, n, folder, kind, bounded and bounds))
    return items


def _item(path, where, rec, task, n, folder, kind, bounded) -> BenchmarkItem:
    if not isinstance(rec, dict):
        raise BenchmarkInputError(path, where, None, f"expected an object, got {type(rec).__name__}")
    candidates = field(path, where, rec, "candidates", list)
    if not 2 <= len(candidates) <= len(LETTERS) or not all(isinstance(c, str) for c in candidates):
        raise BenchmarkInputError(path, where, "candidates", f"expected 2+ strings, got {candidates!r:.80}")
    answer = field(path, where, rec, "answer")
    if answer not in candidates:
        raise BenchmarkInputError(
            path, where, "answer", f"{answer!r} is not one of the candidates {candidates}"
        )
    video = field(path, where, rec, "video")
    start = end = None
    if bounded:
        start = float(field(path, where, rec, "start", (int, float)))
        end = float(field(path, where, rec, "end", (int, float)))
        if not 0 <= start < end:
            raise BenchmarkInputError(path, where, "start", f"bound [{start}, {end}] is not a time range")
    return BenchmarkItem(
        id=f"{BENCHMARK}/{task}/{n}",
        task=task,
        source=BENCHMARK,
        category=task,
        question=field(path, where, rec, "question"),
        options=dict(zip(LETTERS, candidates)),
        answer=LETTERS[candidates.index(answer)],
        setting="base",
        template_id=0,
        media=mute(clip(f"{folder}/{video}", start or 0.0, end)),  # the video stream only
        meta={
            "benchmark": BENCHMARK,
            "video": video,
            "data_type": kind,
            "bound": [start, end] if bounded else None,
        },
    )


def prompt(item: BenchmarkItem, official: bool = False) -> str:
    """The question and "(A) text" options. ``official``: the notebook's wording (its system text, then
    "Only give the best option."); else the lmms-eval task's post prompt (answer with the letter)."""
    listing = "\n".join(f"({k}) {v}" for k, v in item.options.items())
    body = f"Question: {item.question}\nOptions:\n{listing}"
    if official:
        return f"{SYSTEM}\n{body}\nOnly give the best option."
    return f"{body}\nAnswer with the option's letter from the given choices directly."


def official_prediction(response: str | None) -> str:
    """What the notebook scores for a response: "(" (the end of its answer prompt) + the first line."""
    return "(" + (response or "").strip().split("\n")[0]


def check_ans(pred: str, gt: str) -> bool:
    """The notebook's ``check_ans``: first words, lower-cased, "." dropped from the prediction's, compared
    by substring either way (written from its behaviour)."""
    pred_option = pred.lower().split(" ")[0]
    gt_option = gt.lower().split(" ")[0]
    return pred_option.replace(".", "") in gt_option or gt_option in pred_option


def ground_truth(item: BenchmarkItem) -> str:
    """The notebook's answer string: "(X) <answer text>"."""
    return f"({item.answer}) {item.options[item.answer]}"


def mvbench_metrics(results: list[tuple[str, bool, int]]) -> dict[str, Any]:
    """``results``: (sub-task, correct, number of candidates) per item. Per sub-task accuracy and random
    guess, ``Avg`` (correct / total, the notebook's) and ``task_mean`` (unweighted over sub-tasks)."""
    per = {}
    for task in SUBTASKS:
        rs = [(c, k) for t, c, k in results if t == task]
        if rs:
            per[task] = {
                "n": len(rs),
                "acc": 100.0 * sum(c for c, _ in rs) / len(rs),
                "random_guess": 100.0 * mean(1.0 / k for _, k in rs),
            }
    n = len(results)
    return {
        "overall": {"n": n, "Avg": None if not n else 100.0 * sum(c for _, c, _ in results) / n},
        "task_mean": {"n_tasks": len(per), "acc": mean(v["acc"] for v in per.values())},
        "per_subtask": per,
    }
