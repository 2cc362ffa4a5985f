"""TRL's dataset formats, as its "Dataset formats and types" page documents them (``DOC``; in huggingface/trl
the file ``dataset_formats.md`` under ``docs/source``: "Preference" and "Prompt-completion" types, "Standard"
and "Conversational" formats, "Vision datasets").

TRL documents images only: a conversational row whose user content is a list of typed items
(``{"type": "image"}``, ``{"type": "text", "text": ...}``) with the images in an ``images`` column. Written here
the same way for a clip: ``{"type": "video"}`` / ``{"type": "audio"}`` items (the item types of the
Qwen2.5-Omni chat template) with the file paths in ``videos`` / ``audios`` columns. TRL 1.16's ``DPOTrainer``
reads ``images`` only, so those two columns are for a collator that reads them (an import into cavpref, or
your own); the text columns are TRL's. Read: conversational or standard rows, explicit prompt only.
"""

from __future__ import annotations

from typing import Any

from cavpref.data_prep.formats.common import AUDIO_TAG, VIDEO_TAG, Fail, Turn, untagged

DOC = "https://huggingface.co/docs/trl/dataset_formats"


def _assistant(text: str) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": [{"type": "text", "text": text}]}]


def write_row(turn: Turn) -> dict[str, Any]:
    items = [{"type": "video"} for _ in turn.videos] + [{"type": "audio"} for _ in turn.audios]
    row: dict[str, Any] = {
        "prompt": [{"role": "user", "content": [*items, {"type": "text", "text": turn.prompt}]}]
    }
    if turn.rejected is None:
        row["completion"] = _assistant(turn.chosen)
    else:
        row.update(chosen=_assistant(turn.chosen), rejected=_assistant(turn.rejected))
    return {**row, "videos": list(turn.videos), "audios": list(turn.audios), **turn.extras}


def _text(content: Any, fail: Fail, name: str, counts: dict[str, int] | None = None) -> str:
    """A message's text: a string, or the text items of a typed list (video / audio items counted)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not all(isinstance(c, dict) for c in content):
        raise fail(name, "expected text or a list of typed content items", repr(content)[:80])
    parts = []
    for item in content:
        kind = item.get("type")
        if kind == "text":
            parts.append(item.get("text") or "")
        elif kind in ("video", "audio") and counts is not None:
            counts[kind] += 1
        else:
            raise fail(name, f"content item of type {kind!r} is not supported here", repr(item)[:80])
    return "".join(parts)


def _side(value: Any, fail: Fail, name: str) -> str | None:
    """A completion: a string (standard) or a list holding one assistant message (conversational)."""
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, list) or len(value) != 1 or not isinstance(value[0], dict):
        raise fail(name, "expected a string or one assistant message", repr(value)[:80])
    if value[0].get("role") != "assistant":
        raise fail(name, "expected an assistant message", repr(value[0])[:80])
    return _text(value[0].get("content"), fail, name)


def read_row(rec: dict[str, Any], layout: Any, fail: Fail) -> Turn:
    if rec.get("images") or rec.get("image") is not None:
        raise fail("images", "images are not supported", "cavpref rows show one clip")
    if "prompt" not in rec:
        hint = "implicit prompt (chosen / rejected hold the whole conversation): add a prompt column"
        raise fail("prompt", "missing", hint if "chosen" in rec else "")
    if rec.get("label") is not None:
        raise fail("label", "unpaired preference rows have no pair", "cavpref reads SFT rows and pairs")
    videos, audios = rec.get("videos") or [], rec.get("audios") or []
    for name, value in (("videos", videos), ("audios", audios)):
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise fail(name, "expected a list of file paths", repr(value)[:80])
    system, prompt, counts = None, rec["prompt"], {"video": 0, "audio": 0}
    if isinstance(prompt, list):  # conversational: [system?] user
        messages = [m for m in prompt if isinstance(m, dict)]
        if messages[:1] and messages[0].get("role") == "system":
            system, messages = _text(messages[0].get("content"), fail, "prompt"), messages[1:]
        if len(messages) != len(prompt) - (system is not None) or [m.get("role") for m in messages] != [
            "user"
        ]:
            raise fail("prompt", "expected one user message", "cavpref rows are one question and one answer")
        prompt = _text(messages[0].get("content"), fail, "prompt", counts)
        if (counts["video"], counts["audio"]) != (len(videos), len(audios)):
            raise fail("prompt", f"{counts} media items but {len(videos)} video(s), {len(audios)} audio(s)")
    elif not isinstance(prompt, str):
        raise fail("prompt", "expected text or a list of messages", repr(prompt)[:80])
    elif VIDEO_TAG in prompt or AUDIO_TAG in prompt:
        prompt = untagged(prompt, videos, audios, fail, "prompt")
    chosen = _side(
        rec.get("chosen", rec.get("completion")), fail, "chosen" if "chosen" in rec else "completion"
    )
    rejected = _side(rec.get("rejected"), fail, "rejected")
    for what, value in (("prompt", prompt), ("chosen", chosen), ("rejected", rejected)):
        if (value is not None or what != "rejected") and (not isinstance(value, str) or not value.strip()):
            raise fail(
                what if what != "chosen" or "chosen" in rec else "completion", f"{what} is missing or empty"
            )
    return Turn(prompt, chosen, rejected, list(videos), list(audios), system=system)
