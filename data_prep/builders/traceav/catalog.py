"""TraceAV-Bench Steps 1, 2 and 3a: from a long video to a catalog of audio-visual events.

* Step 1, ``visual``: the video in ``segment_s`` segments (a minute in the paper), picture only, captioned
  in order with an **entity cache**: every call sees the entities named so far, so names stay the same across
  segments. Sequential within a video (each call needs the cache the previous ones built).
* Step 2, ``fusion``: each segment's sound with its visual caption and entities, one call per segment, in
  any order (the paper's "asynchronous" fusion): one integrated caption, and updated descriptions of the
  entities the sound tells something new about. An entity updated by sound is "audio-visual", else "visual".
* Step 3a, ``segment``: a sliding judge over the fused captions, with the running summary of the open event
  and a two-segment look-ahead, says CONTINUE / OVERLAP_TRANSITION / HARD_CUT for each segment; the events
  (id, first and last segment, summary, entities, captions) are what the agents of Step 3b-c work on. An
  overlapping segment closes the old event and opens the new one, as the released code does.

Prompts are ours; their JSON fields are the released intermediate files' (``minute_summary``,
``present_entities``, ``new_entities``; ``integrated_caption``, ``updated_entities``; ``action``,
``updated_summary``). Unlike the released scripts, a failed or unusable reply never becomes an empty caption
or a silent CONTINUE: the video's stage fails, is counted, and is asked again on the next run.
"""

from __future__ import annotations

import json
from typing import Any

from cavpref.chat_json import parse_json_reply

ACTIONS = ("CONTINUE", "OVERLAP_TRANSITION", "HARD_CUT")
END = "END_OF_VIDEO"

VISUAL_PROMPT = """This is segment {minute} of a long video (seconds {start:g} to {end:g}), the picture only. Describe
it as one continuous narrative: how the actions unfold from start to end, the people and objects, clothing,
gestures, any on-screen text, and changes of place, light or mood.

Entities identified in earlier segments (use these names for them):
{cache}

Reply with JSON only:
{{"minute_summary": "one dense paragraph, using the names above",
 "present_entities": {{"<known name>": "its description, updated if it changed"}},
 "new_entities": {{"<new name>": "a description that tells it apart later"}}}}
List under present_entities only known entities visible in this segment; every description is non-empty."""

FUSION_PROMPT = """You hear the sound of segment {minute} of a long video. What is seen in it:
{visual}

Entities seen (name: description):
{entities}

Write one dense paragraph joining what is seen with what is heard: keep every visual fact, and add the speech
(what is said, and by whom when it can be told), the environmental sounds and the music. When the sound tells
something new about an entity above (its name is said, its voice, a sound it makes), give its updated
description. Reply with JSON only:
{{"integrated_caption": "...", "updated_entities": {{"<entity name>": "updated description"}}}}"""

SEGMENT_SYSTEM = (
    "You segment a long video into events from its minute-by-minute captions. Reply with JSON only."
)
SEGMENT_PROMPT = """Current segment {minute}: {caption}
Entities active in segment {minute}: {entities}

The ongoing event so far: {summary}

Look-ahead: segment {minute}+1: {next1}
            segment {minute}+2: {next2}

How does segment {minute} relate to the ongoing event?
- CONTINUE: the same story and characters go on;
- OVERLAP_TRANSITION: it closes the ongoing event and opens the next one;
- HARD_CUT: it breaks with the ongoing event and belongs to what the look-ahead shows.
Reply {{"action": "CONTINUE" | "OVERLAP_TRANSITION" | "HARD_CUT", "reason": "...",
"updated_summary": "a dense paragraph of the event segment {minute} belongs to, as it stands now"}}"""


def _entities(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        return {}
    return {str(k).strip(): str(v).strip() for k, v in value.items() if str(k).strip() and str(v).strip()}


def parse_visual(text: str | None) -> dict[str, Any]:
    obj = parse_json_reply(text, want=dict)
    summary = obj.get("minute_summary")
    if not isinstance(summary, str) or not summary.strip():
        raise ValueError("no minute_summary")
    return {
        "caption": summary.strip(),
        "present": _entities(obj.get("present_entities")),
        "new": _entities(obj.get("new_entities")),
    }


def merge_cache(cache: dict[str, str], reply: dict[str, Any]) -> tuple[dict[str, str], dict[str, str]]:
    """(entities of known names, newly named entities) of one segment; ``cache`` is updated with both. A
    "new" entity under a known name is a known one (the released merge)."""
    merged = dict(reply["present"])
    for name, desc in reply["new"].items():
        merged.setdefault(name, desc)
    present = {k: v for k, v in merged.items() if k in cache}
    new = {k: v for k, v in merged.items() if k not in cache}
    cache.update(present)
    cache.update(new)
    return present, new


def parse_fusion(text: str | None) -> dict[str, Any]:
    obj = parse_json_reply(text, want=dict)
    caption = obj.get("integrated_caption")
    if not isinstance(caption, str) or not caption.strip():
        raise ValueError("no integrated_caption")
    return {"caption": caption.strip(), "updated": _entities(obj.get("updated_entities"))}


def minute_entities(visual_seg: dict[str, Any], fused: dict[str, Any]) -> dict[str, dict[str, str]]:
    """The entities of one segment after fusion: description (the sound's update when there is one) and
    attribute ("audio-visual" when the sound told something about it, else "visual")."""
    seen = {**visual_seg["active_entities"], **visual_seg["discovered_new_entities"]}
    return {
        name: {
            "description": fused["updated"].get(name, desc),
            "attribute": "audio-visual" if name in fused["updated"] else "visual",
        }
        for name, desc in seen.items()
    }


def parse_segment(text: str | None) -> dict[str, str]:
    obj = parse_json_reply(text, want=dict)
    action = str(obj.get("action", "")).strip().upper()
    if action not in ACTIONS:
        raise ValueError(f"action {obj.get('action')!r} is not one of {ACTIONS}")
    summary = obj.get("updated_summary")
    if not isinstance(summary, str) or not summary.strip():
        raise ValueError("no updated_summary")
    return {"action": action, "summary": summary.strip()}


def segment_prompt(minutes: list[dict], t: int, summary: str) -> str:
    """The judge's input at segment index ``t`` (0-based) of the fused ``minutes``."""

    def ahead(k):
        return minutes[k]["caption"] if k < len(minutes) else END

    return SEGMENT_PROMPT.format(
        minute=minutes[t]["minute"],
        caption=minutes[t]["caption"],
        entities=", ".join(minutes[t]["entities"]) or "None",
        summary=summary,
        next1=ahead(t + 1),
        next2=ahead(t + 2),
    )


def new_event(minute: dict, summary: str) -> dict[str, Any]:
    return {
        "start_minute": minute["minute"],
        "end_minute": None,
        "summary": summary,
        "involved_entities": dict(minute["entities"]),
        "raw_segments": [minute["caption"]],
    }


def apply_action(
    events: list[dict], current: dict, minute: dict, prev_minute: int, decision: dict[str, str]
) -> dict:
    """One step of the segmentation: returns the open event after segment ``minute``."""
    if decision["action"] == "CONTINUE":
        current["raw_segments"].append(minute["caption"])
        current["summary"] = decision["summary"]
        current["involved_entities"].update(minute["entities"])
        return current
    if decision["action"] == "OVERLAP_TRANSITION":
        current["end_minute"] = minute["minute"]
        current["raw_segments"].append(minute["caption"])
        current["involved_entities"].update(minute["entities"])
    else:  # HARD_CUT
        current["end_minute"] = prev_minute
    events.append(current)
    return new_event(minute, decision["summary"])


def close(events: list[dict], current: dict, last_minute: int) -> list[dict]:
    current["end_minute"] = last_minute
    events.append(current)
    return [{"event_id": i, **e} for i, e in enumerate(events, 1)]


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1) if value else "None"
