"""ms-swift's standard dataset format, as its custom-dataset page documents it (modelscope/ms-swift
``docs/source_en/Customization/Custom-dataset.md``: "Standard Dataset Format" -> "Supervised Fine-tuning",
"RLHF" -> "DPO/ORPO/CPO/SimPO/RM", "Multimodal").

Written: ``messages`` (the user turn with one ``<video>`` / ``<audio>`` tag per file, then the chosen assistant
turn), ``rejected_response`` for preference rows, and ``videos`` / ``audios`` lists (absolute paths by default,
as the page advises). Read: the same, with ``rejected_response`` as a string or one assistant message,
``rejected_messages`` (its last assistant turn; the user turn must be the chosen side's), the documented
aliases ``video`` / ``audio``, and ``rejected_videos`` / ``rejected_audios``: equal to the chosen side's files
they say nothing; different, they are ms-swift's conditional preference — the same response under other media
(its DPO example ``"images": ["cat.png"], "rejected_images": ["dog.png"]`` with no ``rejected_response``) —
which is a CAVPref anchor pair: the response under the row's media vs under the given media
(``formats/conditional.py`` turns them into the row's visual or audio anchor, and writes cavpref's anchors
back out as such rows). A per-row ``use_audio_in_video`` column (bool) is read and written as the row's own
(``PreferenceExample.use_audio_in_video``: the model I/O honours it; absent: the recipe's flag).
"""

from __future__ import annotations

from typing import Any

from cavpref.data_prep.formats.common import Fail, Turn, tagged, untagged

DOC = "https://github.com/modelscope/ms-swift/blob/main/docs/source_en/Customization/Custom-dataset.md"
NATIVE = ("use_audio_in_video",)  # cavpref columns this format has a column of its own for
ALIASES = {"videos": ("videos", "video"), "audios": ("audios", "audio"), "images": ("images", "image")}


def write_row(turn: Turn) -> dict[str, Any]:
    user = {"role": "user", "content": tagged(turn.prompt, turn.videos, turn.audios)}
    row: dict[str, Any] = {"messages": [user, {"role": "assistant", "content": turn.chosen}]}
    if turn.rejected is not None:
        row["rejected_response"] = turn.rejected
    row.update(videos=list(turn.videos), audios=list(turn.audios))
    for key, files in (("rejected_videos", turn.rejected_videos), ("rejected_audios", turn.rejected_audios)):
        if files is not None:
            row[key] = list(files)
    if turn.use_audio_in_video is not None:
        row["use_audio_in_video"] = turn.use_audio_in_video
    return {**row, **turn.extras}


def _files(rec: dict[str, Any], kind: str, fail: Fail, prefix: str = "") -> list[str] | None:
    for key in ALIASES[kind]:
        if rec.get(prefix + key) is not None:
            value = rec[prefix + key]
            value = [value] if isinstance(value, str) else value
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise fail(prefix + key, "expected file paths", repr(value)[:80])
            return value
    return None


def _split(messages: Any, fail: Fail, name: str) -> tuple[str | None, str, str | None]:
    """(system, user text, assistant text or None) of a one-question conversation."""
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise fail(name, "expected a list of messages", repr(messages)[:80])
    system = None
    if messages and messages[0].get("role") == "system":
        system, messages = messages[0].get("content"), messages[1:]
    roles = [m.get("role") for m in messages]
    if roles not in (["user"], ["user", "assistant"]):
        raise fail(
            name, "expected one user turn and its answer", f"got {roles} (cavpref rows are one exchange)"
        )
    return system, messages[0].get("content"), messages[1].get("content") if len(messages) > 1 else None


def read_row(rec: dict[str, Any], layout: Any, fail: Fail) -> Turn:
    if "messages" not in rec:
        other = [k for k in ("conversation", "conversations", "query", "instruction") if k in rec]
        raise fail(
            "messages",
            "missing",
            f"has {other}: convert to the standard messages format first" if other else "",
        )
    if rec.get("label") is not None:
        raise fail("label", "KTO rows have no preference pair", "cavpref reads SFT rows and pairs")
    if rec.get("tools"):  # the agent format: the model would see tool descriptions cavpref does not show
        raise fail(
            "tools", "tool descriptions are not supported", "cavpref rows are one question and one answer"
        )
    if _files(rec, "images", fail) or _files(rec, "images", fail, "rejected_"):
        raise fail("images", "images are not supported", "cavpref rows show one clip")
    videos, audios = _files(rec, "videos", fail) or [], _files(rec, "audios", fail) or []
    system, prompt, chosen = _split(rec["messages"], fail, "messages")
    if chosen is None:
        raise fail("messages", "no assistant turn (the chosen answer)")
    rejected = rec.get("rejected_response")
    if isinstance(rejected, list):  # [{"role": "assistant", "content": ...}]
        if len(rejected) != 1 or not isinstance(rejected[0], dict) or rejected[0].get("role") != "assistant":
            raise fail("rejected_response", "expected a string or one assistant message", repr(rejected)[:80])
        rejected = rejected[0].get("content")
    if rec.get("rejected_messages") is not None:
        _, other_prompt, rejected = _split(rec["rejected_messages"], fail, "rejected_messages")
        if other_prompt != prompt:
            raise fail(
                "rejected_messages",
                "its user turn differs from the chosen side's",
                "a pair shares the prompt",
            )
    other = {kind: _files(rec, kind, fail, "rejected_") for kind in ("videos", "audios")}
    other = {k: None if v == files else v for (k, v), files in zip(other.items(), (videos, audios))}
    for what, value in (("messages", prompt), ("messages", chosen), ("rejected_response", rejected)):
        if (value is not None or what == "messages") and (not isinstance(value, str) or not value.strip()):
            raise fail(what, "empty or not text", repr(value)[:80])
    flag = rec.get("use_audio_in_video")
    if flag is not None and not isinstance(flag, bool):
        raise fail("use_audio_in_video", "expected true, false or null", repr(flag)[:80])
    return Turn(
        untagged(prompt, videos, audios, fail, "messages"),
        chosen,
        rejected,
        videos,
        audios,
        system=system,
        rejected_videos=other["videos"],
        rejected_audios=other["audios"],
        use_audio_in_video=flag,
    )
