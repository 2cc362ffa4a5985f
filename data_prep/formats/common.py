"""What the three trainers' formats share: a trainer-neutral row (``Turn``), media lists <-> one MediaSpec, the
placeholder tags, the ``cavpref_*`` columns and the input / output file handling.

LLaMA-Factory, ms-swift and TRL all describe a sample as chat text plus lists of media files (``videos``,
``audios``) with a placeholder tag per file in the user's text; cavpref describes it as one prompt, one MediaSpec
and, for CAVPref, anchor rows. A ``Turn`` is the common ground: every format module turns its row into a Turn and
back, and this module maps a Turn's file lists to and from the MediaSpec.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cavpref import jsonl
from cavpref.data_prep.readers.common import ReaderError
from cavpref.data_prep.tasks.schema import PREFERENCE_FEATURES
from cavpref.media.spec import (
    Combine,
    MediaError,
    MediaSpec,
    Source,
    drop_video,
    from_json,
    mute,
    resolve_path,
    sources,
)

VIDEO_TAG, AUDIO_TAG, IMAGE_TAG = "<video>", "<audio>", "<image>"
# cavpref's own columns beside the format's, prefixed so no trainer mistakes them for one of its own: the
# other trainers ignore them (they train plain DPO / SFT on the visible pair), an import reads them back.
EXTRA_PREFIX = "cavpref_"
CARRIED = ("prompt", "chosen", "rejected")  # the format's own fields hold these
EXTRA_COLUMNS = tuple(
    EXTRA_PREFIX + k for k in PREFERENCE_FEATURES if k not in CARRIED
)  # the row's other columns
# the row's ``use_audio_in_video``: a column of its own in ms-swift (``FLAG``), a cavpref_* column elsewhere; a
# file exported before the column existed lacks it (None: the recipe's flag)
FLAG = "use_audio_in_video"
OPTIONAL_EXTRAS = (EXTRA_PREFIX + FLAG,)


@dataclass
class Turn:
    """One sample as every format sees it: one user prompt, the chosen (and, for preference data, rejected)
    answer, the media files (paths as written in the file) and cavpref's own columns."""

    prompt: str
    chosen: str
    rejected: str | None  # None: an SFT row
    videos: list[str] = field(default_factory=list)
    audios: list[str] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)  # cavpref_* columns, as stored
    system: str | None = None
    # ms-swift's rejected_videos / rejected_audios where they differ from the chosen side's files: the same
    # response under other media, a CAVPref anchor pair (``formats/conditional.py``); None: not given / equal
    rejected_videos: list[str] | None = None
    rejected_audios: list[str] | None = None
    use_audio_in_video: bool | None = None  # the row's own column; None: the import's --use_audio_in_video


class Fail:
    """Builds a ``ReaderError`` naming the file, the record (and line for JSONL) and the field."""

    def __init__(self, file: str, index: int, line: int | None):
        self.file, self.index, self.line = file, index, line

    def __call__(self, field_name: str | None, problem: str, detail: str = "") -> ReaderError:
        return ReaderError(self.file, self.index, field_name, problem, detail, line=self.line)


def tagged(prompt: str, videos: list[str], audios: list[str]) -> str:
    """The user text of the formats: one ``<video>`` / ``<audio>`` tag per file before the prompt (as
    LLaMA-Factory's ``mllm_video_audio_demo.json`` writes it)."""
    return VIDEO_TAG * len(videos) + AUDIO_TAG * len(audios) + prompt


def untagged(text: str, videos: list, audios: list, fail: Fail, name: str) -> str:
    """The prompt without its tags; the tag counts must equal the file lists (the trainers check the same)."""
    if IMAGE_TAG in text:
        raise fail(
            name, "images are not supported", "cavpref rows show one clip: a video and/or an audio file"
        )
    for tag, files in ((VIDEO_TAG, videos), (AUDIO_TAG, audios)):
        if text.count(tag) != len(files):
            raise fail(name, f"{text.count(tag)} {tag} tag(s) but {len(files)} file(s)", repr(text[:80]))
    return text.replace(VIDEO_TAG, "").replace(AUDIO_TAG, "")


# ----------------------------------------------------------------------------- media


def _whole(x: MediaSpec | None) -> bool:
    return x is None or (isinstance(x, Source) and x.start == 0 and x.end is None)


def spec_files(
    spec: MediaSpec, streams: Callable[[str], tuple[bool, bool]] | None = None
) -> tuple[list[str], list[str]] | None:
    """(videos, audios) naming whole files, or None when the spec cuts, joins or mixes (it must be written out):
    a clip -> its file in both lists (the audios entry is the clip's own track); video of X with audio of Y ->
    [X], [Y]; a muted clip -> [X], []; a clip without its video -> [], [X]. ``streams(path)`` says whether a
    file has (video, audio): a clip of a silent video is listed in ``videos`` only, a clip of an audio file in
    ``audios`` only (listing a file for a stream it lacks makes the other trainers load a track that is not
    there)."""
    if isinstance(spec, Source):
        if not _whole(spec):
            return None
        video, audio = streams(spec.path) if streams else (True, True)
        return ([spec.path] if video or not audio else []), ([spec.path] if audio else [])
    if isinstance(spec, Combine) and _whole(spec.video) and _whole(spec.audio):
        return [spec.video.path] if spec.video else [], [spec.audio.path] if spec.audio else []
    return None


def files_spec(videos: list[str], audios: list[str], use_audio_in_video: bool, fail: Fail) -> MediaSpec:
    """The inverse of ``spec_files`` for one video and / or one audio file (paths already data-root relative).
    A video without an audio file is heard through its own track when ``use_audio_in_video`` (the flag of the
    same name in LLaMA-Factory and ms-swift), else shown muted."""
    if len(videos) > 1 or len(audios) > 1:
        raise fail(
            "videos" if len(videos) > 1 else "audios", "more than one file", "a cavpref row shows one clip"
        )
    try:
        video = Source(videos[0]) if videos else None
        audio = Source(audios[0]) if audios else None
    except MediaError as err:
        raise fail("videos" if videos else "audios", "bad media path", str(err)) from None
    if video is not None and audio is not None:
        return video if video == audio else Combine(video=video, audio=audio)
    if video is not None:
        return video if use_audio_in_video else mute(video)
    if audio is not None:
        return drop_video(audio)
    raise fail("videos", "neither a video nor an audio file", "cavpref trains on audio-visual rows")


# a URL (http://, https://, file:///, s3://, ...) or a data: URI; two letters at least, so "C:/x" is a path
_URL = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]+://|data:)")


def relative_to(root: Path, base: Path, path: str, fail: Fail, name: str) -> str:
    """A path as written in a file (absolute, or relative to ``base``) as a path relative to ``root``. The file
    must exist and stay under ``root`` after symlinks are followed (as training and prep resolve it); a URL is
    refused here, not turned into a relative path that fails at the first training step."""
    if not isinstance(path, str) or not path.strip():
        raise fail(name, "expected a file path", repr(path))
    if _URL.match(path):
        raise fail(name, "a URL, not a file path", f"{path[:80]}: download the file and name its path")
    full = Path(os.path.normpath(base / path))
    try:
        rel = full.relative_to(root).as_posix()
    except ValueError:
        raise fail(name, "outside the data root", f"{full} is not under {root}; set data_root") from None
    try:
        resolve_path(root, rel)
    except MediaError as err:
        raise fail(name, "outside the data root", str(err)) from None
    if not full.is_file():
        raise fail(name, "media file not found", str(full))
    return rel


def check_extras(extras: dict[str, Any], fail: Fail) -> None:
    """Each ``cavpref_*`` column of the type its preference-row feature has (a string ``cavpref_source_ids``
    would be stored as a list of its characters), ``cavpref_media`` a MediaSpec, no unknown column."""
    for name, value in extras.items():
        key = name[len(EXTRA_PREFIX) :]
        if name not in EXTRA_COLUMNS:
            raise fail(name, "not a cavpref column", f"cavpref_* columns: {list(EXTRA_COLUMNS)}")
        dtype = getattr(PREFERENCE_FEATURES[key], "dtype", "list")
        ok = {
            "string": value is None or isinstance(value, str),  # an anchor column is null without anchors
            "float64": value is None or (isinstance(value, int | float) and not isinstance(value, bool)),
            "list": isinstance(value, list) and all(isinstance(v, str) for v in value),
            "bool": value is None or isinstance(value, bool),  # None: the recipe's flag
        }[dtype]
        if not ok:
            want = {
                "string": "a string or null",
                "float64": "a number or null",
                "list": "a list of strings",
                "bool": "true, false or null",
            }[dtype]
            raise fail(name, f"expected {want}", f"got {type(value).__name__} {json.dumps(value)[:60]}")
    try:
        from_json(extras[EXTRA_PREFIX + "media"])
    except (MediaError, ValueError, KeyError, TypeError) as err:
        raise fail(EXTRA_PREFIX + "media", "not a MediaSpec", str(err)[:120]) from None


def check_exported_media(media: str, root: str | None, fail: Fail) -> None:
    """A row written by cavpref names its clips in ``cavpref_media``, relative to the export's media root:
    each must exist there (the same check as a file path in ``videos`` / ``audios``)."""
    if root is None:  # no export.json beside the file: the root is the user's to give at training
        return
    for src in sources(from_json(media)):
        try:
            full = resolve_path(root, src.path)
        except MediaError as err:
            raise fail(EXTRA_PREFIX + "media", "outside the data root", str(err)) from None
        if not full.is_file():
            raise fail(EXTRA_PREFIX + "media", "media file not found", f"{full} (the export's media_root)")


# ----------------------------------------------------------------------------- files


def read_records(path: str) -> list[tuple[int | None, Any]]:
    """(line or None, record) of a JSON array file or a JSONL file (``.jsonl``, read by ``cavpref.jsonl``: a
    line that is not JSON takes its record's place as a ``ReaderError``); unreadable files raise."""
    try:
        text = jsonl.read_text(path)
    except jsonl.JsonlError as err:
        raise ReaderError.unreadable(err) from None
    if Path(path).suffix == ".jsonl":
        out = []
        for index, (n, rec) in enumerate(jsonl.read_jsonl(path, text=text, keep_errors=True)):
            if isinstance(rec, jsonl.JsonlError):
                rec = ReaderError(path, index, None, rec.problem, rec.detail, line=n)
            out.append((n, rec))
        return out
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise ReaderError(path, None, None, "not valid JSON", f"line {err.lineno}: {err.msg}") from None
    if not isinstance(data, list):
        raise ReaderError(path, None, None, "expected a JSON array of records (or a .jsonl file)")
    return [(None, r) for r in data]


def sft_note(stats: dict[str, Any]) -> str | None:
    """What to say about SFT rows (no rejected side): only ``method: sft`` trains them (every preference
    method refuses a row without a rejected answer)."""
    n = stats.get("counts", {}).get("sft rows", 0)
    if not n:
        return None
    some = "all" if n == stats.get("imported") else f"{n} of {stats.get('imported')}"
    return (
        f"{some} rows are SFT rows (no rejected answer): they train only with `method: sft` "
        "(recipes/tiny/sft.yaml); the preference methods (cavpref, dpo) refuse them"
    )


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
