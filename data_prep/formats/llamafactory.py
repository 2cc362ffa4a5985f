"""LLaMA-Factory's dataset format, as its ``data/README.md`` documents it (hiyouga/LLaMA-Factory: "Sharegpt Format"
-> "Preference Dataset", "Multimodal Video Dataset", "Multimodal Audio Dataset", "OpenAI Format"; "Alpaca Format"
-> "Preference Dataset"), and the ``dataset_info.json`` entry that names a file's columns and tags
(its ``mllm_video_audio_demo`` entry: a silent ``.mp4`` in ``videos`` and its sound in ``audios``).

Written: ShareGPT records with OpenAI-style tags (``messages`` of ``role`` / ``content``), one user turn whose
text starts with a ``<video>`` / ``<audio>`` tag per file, ``chosen`` / ``rejected`` assistant messages
(preference) or the assistant turn (SFT), ``videos`` / ``audios`` lists, and a ``dataset_info.json`` describing
the files. Read: any ShareGPT or Alpaca layout its ``dataset_info.json`` entry describes (columns and tags), or,
without one, the layout guessed from the first record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cavpref.data_prep.formats.common import Fail, Turn, tagged, untagged

DOC = "https://github.com/hiyouga/LLaMA-Factory/blob/main/data/README.md"
SHAREGPT_TAGS = {
    "role_tag": "from",
    "content_tag": "value",
    "user_tag": "human",
    "assistant_tag": "gpt",
    "system_tag": "system",
}
OPENAI_TAGS = {
    "role_tag": "role",
    "content_tag": "content",
    "user_tag": "user",
    "assistant_tag": "assistant",
    "system_tag": "system",
}
DEFAULT_COLUMNS = {  # data/README.md's defaults
    "sharegpt": {"messages": "conversations"},
    "alpaca": {"prompt": "instruction", "query": "input", "response": "output"},
}


@dataclass
class Layout:
    """One ``dataset_info.json`` entry with its defaults filled in."""

    formatting: str = "sharegpt"
    ranking: bool = False
    columns: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=lambda: dict(SHAREGPT_TAGS))

    @classmethod
    def from_entry(cls, entry: dict[str, Any], where: str) -> Layout:
        formatting = entry.get("formatting", "alpaca")
        if formatting not in DEFAULT_COLUMNS:
            raise ValueError(f"{where}: formatting {formatting!r} (expected sharegpt or alpaca)")
        columns = {**DEFAULT_COLUMNS[formatting], **(entry.get("columns") or {})}
        if "kto_tag" in columns:
            raise ValueError(
                f"{where}: KTO data (kto_tag) has no preference pairs; cavpref reads SFT and pairs"
            )
        return cls(
            formatting,
            bool(entry.get("ranking", False)),
            columns,
            {**SHAREGPT_TAGS, **(entry.get("tags") or {})},
        )

    @classmethod
    def guess(cls, record: Any) -> Layout:
        """Without ``dataset_info.json``: OpenAI-style ``messages`` or ShareGPT ``conversations``; media, system
        and chosen / rejected columns by their documented names."""
        record = record if isinstance(record, dict) else {}
        known = [c for c in ("system", "videos", "audios", "images", "chosen", "rejected") if c in record]
        columns = {c: c for c in known}
        if "instruction" in record:
            return cls("alpaca", "chosen" in record, {**DEFAULT_COLUMNS["alpaca"], **columns})
        key = "messages" if "messages" in record else "conversations"
        first = (record.get(key) or [{}])[0]
        tags = OPENAI_TAGS if isinstance(first, dict) and "role" in first else SHAREGPT_TAGS
        return cls("sharegpt", "chosen" in record, {"messages": key, **columns}, dict(tags))


def load_info(path: str, dataset: str) -> tuple[Layout, str]:
    """(layout, data file) of entry ``dataset`` of a ``dataset_info.json``; the file is relative to its folder."""
    try:
        info = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: cannot read dataset_info.json ({err})") from None
    if dataset not in info:
        raise ValueError(f"{path}: no dataset {dataset!r} (entries: {sorted(info)})")
    entry = info[dataset]
    if "file_name" not in entry:
        raise ValueError(
            f"{path}: dataset {dataset!r} has no file_name (hub / script datasets are not read here)"
        )
    return Layout.from_entry(entry, f"{path}: dataset {dataset!r}"), str(
        Path(path).parent / entry["file_name"]
    )


def write_row(turn: Turn) -> dict[str, Any]:
    user = {"role": "user", "content": tagged(turn.prompt, turn.videos, turn.audios)}
    if turn.rejected is None:
        row = {"messages": [user, {"role": "assistant", "content": turn.chosen}]}
    else:
        row = {
            "messages": [user],
            "chosen": {"role": "assistant", "content": turn.chosen},
            "rejected": {"role": "assistant", "content": turn.rejected},
        }
    return {**row, "videos": list(turn.videos), "audios": list(turn.audios), **turn.extras}


def info_entry(file_name: str, preference: bool) -> dict[str, Any]:
    """The ``dataset_info.json`` entry of a file ``write_row`` wrote."""
    columns = {"messages": "messages", "videos": "videos", "audios": "audios"}
    if preference:
        columns.update(chosen="chosen", rejected="rejected")
    entry = {"file_name": file_name, "formatting": "sharegpt", "ranking": preference, "columns": columns}
    return {**entry, "tags": dict(OPENAI_TAGS)}


def read_row(rec: dict[str, Any], layout: Layout, fail: Fail) -> Turn:
    cols, tags = layout.columns, layout.tags

    def column(name: str) -> Any:
        return rec.get(cols[name]) if name in cols else None

    if column("images"):
        raise fail(cols["images"], "images are not supported", "cavpref rows show one clip")
    videos, audios = column("videos") or [], column("audios") or []
    for name, value in (("videos", videos), ("audios", audios)):
        if not isinstance(value, list):
            raise fail(cols[name], "expected a list of file paths", repr(value))
    system = column("system")
    if layout.formatting == "alpaca":
        if column("history"):
            raise fail(cols["history"], "multi-turn history", "cavpref rows are one question and one answer")
        prompt = "\n".join(x for x in (column("prompt"), column("query")) if x)
        chosen, rejected = (
            (column("chosen"), column("rejected")) if layout.ranking else (column("response"), None)
        )
        name = cols["prompt"]
    else:
        name = cols["messages"]
        turns = column("messages")
        if not isinstance(turns, list) or not all(isinstance(t, dict) for t in turns):
            raise fail(name, "expected a list of messages", repr(turns)[:80])
        roles = [t.get(tags["role_tag"]) for t in turns]
        contents = [t.get(tags["content_tag"]) for t in turns]
        if roles[:1] == [tags["system_tag"]]:
            system, roles, contents = contents[0], roles[1:], contents[1:]
        want = [tags["user_tag"]] + ([] if layout.ranking else [tags["assistant_tag"]])
        if roles != want:
            raise fail(
                name,
                f"expected the turns {want}",
                f"got {roles} (cavpref rows are one question and one answer)",
            )
        prompt, chosen, rejected = contents[0], (None if layout.ranking else contents[1]), None
        if layout.ranking:
            chosen, rejected = (
                _reply(rec.get(cols.get(k, k)), tags, fail, cols.get(k, k)) for k in ("chosen", "rejected")
            )
    for what, value in (("prompt", prompt), ("chosen", chosen)) + (
        (("rejected", rejected),) if layout.ranking else ()
    ):
        if not isinstance(value, str) or not value.strip():
            raise fail(name if what == "prompt" else cols.get(what, what), f"{what} is missing or empty")
    return Turn(
        untagged(prompt, videos, audios, fail, name),
        chosen,
        rejected,
        list(videos),
        list(audios),
        system=system,
    )


def _reply(message: Any, tags: dict[str, str], fail: Fail, name: str) -> str | None:
    if isinstance(message, dict):
        if message.get(tags["role_tag"]) != tags["assistant_tag"]:
            raise fail(name, f"expected an {tags['assistant_tag']!r} message", repr(message)[:80])
        return message.get(tags["content_tag"])
    return message
