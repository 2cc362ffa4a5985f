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
# the names LLaMA-Factory's DatasetAttr reads from an entry (data/README.md; any other name is a typo there)
COLUMN_KEYS = ("prompt", "query", "response", "history", "messages", "system", "tools", "images", "videos",
               "audios", "chosen", "rejected", "kto_tag")  # fmt: skip
TAG_KEYS = ("role_tag", "content_tag", "user_tag", "assistant_tag", "observation_tag", "function_tag",
            "system_tag")  # fmt: skip
REMOTE_KEYS = ("hf_hub_url", "ms_hub_url", "script_url", "cloud_file_name")
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
        """The layout of one entry; a value of the wrong shape is an error naming the entry and field."""
        formatting = entry.get("formatting", "alpaca")
        if not isinstance(formatting, str) or formatting not in DEFAULT_COLUMNS:
            raise _bad(where, "formatting", "expected sharegpt or alpaca", formatting)
        ranking = entry.get("ranking", False)
        if not isinstance(ranking, bool):
            raise _bad(where, "ranking", "expected true or false", ranking)
        columns = {**DEFAULT_COLUMNS[formatting], **_names(entry, "columns", COLUMN_KEYS, where)}
        if "kto_tag" in columns:
            raise ValueError(
                f"{where}: KTO data (kto_tag) has no preference pairs; cavpref reads SFT and pairs"
            )
        return cls(formatting, ranking, columns, {**SHAREGPT_TAGS, **_names(entry, "tags", TAG_KEYS, where)})

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


def _names(entry: dict[str, Any], key: str, known: tuple[str, ...], where: str) -> dict[str, str]:
    """``columns`` / ``tags`` of an entry: an object mapping LLaMA-Factory's names to non-empty strings."""
    value = entry.get(key) or {}
    if not isinstance(value, dict):
        raise _bad(where, key, f"expected an object of names ({', '.join(known[:3])}, ...)", value)
    for name, column in value.items():
        if name not in known:
            raise _bad(where, f"{key}.{name}", f"not one of LLaMA-Factory's {key} {list(known)}")
        if not isinstance(column, str) or not column:
            raise _bad(where, f"{key}.{name}", "expected a name (a string)", column)
    return value


def _bad(where: str, name: str | None, problem: str, *got: Any) -> ValueError:
    """``where: field 'name': problem, got <type> <value>`` (the value cut to 60 characters)."""
    field_ = f" field {name!r}:" if name else ""
    shown = f", got {type(got[0]).__name__} {json.dumps(got[0])[:60]}" if got else ""
    return ValueError(f"{where}:{field_} {problem}{shown}")


def load_info(path: str, dataset: str) -> tuple[Layout, list[str]]:
    """(layout, data files) of entry ``dataset`` of a ``dataset_info.json``: ``file_name`` is a file or a
    folder (its JSON / JSONL files, as LLaMA-Factory loads a folder) relative to the json's folder. Every
    malformed shape is a one-line error naming the file, the entry and the field."""
    try:
        info = json.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path}: cannot read dataset_info.json ({err})") from None
    if not isinstance(info, dict):
        raise _bad(path, None, "expected an object of dataset entries ({name: {file_name, ...}})", info)
    if dataset not in info:
        raise ValueError(f"{path}: no dataset {dataset!r} (entries: {sorted(info)})")
    entry, where = info[dataset], f"{path}: dataset {dataset!r}"
    if not isinstance(entry, dict):
        raise _bad(where, None, "expected an object (file_name, formatting, columns, ...)", entry)
    remote = [k for k in REMOTE_KEYS if entry.get(k)]
    if remote:  # LLaMA-Factory then ignores file_name
        raise ValueError(f"{where}: field {remote[0]!r}: hub / script / cloud datasets are not read here")
    if "file_name" not in entry:
        raise ValueError(f"{where}: has no file_name (hub / script datasets are not read here)")
    name = entry["file_name"]
    if not isinstance(name, str) or not name.strip():
        raise ValueError(
            f"{where}: field 'file_name': expected a file or folder name, got {json.dumps(name)[:60]}"
        )
    for key in ("num_samples", "subset", "folder"):
        if entry.get(key) is not None:
            raise ValueError(
                f"{where}: field {key!r}: not applied by cavpref data import (it reads every record of the "
                "file); remove it or import a file holding just the records you want"
            )
    layout = Layout.from_entry(entry, where)
    file = Path(path).parent / name
    if not file.is_dir():
        return layout, [str(file)]
    own = Path(path).resolve()
    files = sorted(str(f) for f in file.iterdir() if f.suffix in (".json", ".jsonl") and f.resolve() != own)
    if not files:
        raise ValueError(f"{where}: field 'file_name': folder {file} holds no .json / .jsonl file")
    return layout, files


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
    if column("tools"):
        raise fail(
            cols["tools"],
            "tool descriptions are not supported",
            "cavpref rows are one question and one answer",
        )
    videos, audios = column("videos") or [], column("audios") or []
    for name, value in (("videos", videos), ("audios", audios)):
        if not isinstance(value, list):
            raise fail(cols[name], "expected a list of file paths", repr(value))
    system = column("system")
    if layout.formatting == "alpaca":
        if column("history"):
            raise fail(cols["history"], "multi-turn history", "cavpref rows are one question and one answer")
        for part in ("prompt", "query"):
            if column(part) is not None and not isinstance(column(part), str):
                raise fail(cols[part], "expected text", repr(column(part))[:80])
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
