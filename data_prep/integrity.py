"""The file list of a prep output folder, so that "up to date" means the files are really there, unchanged.

The manifest's fingerprint says which config, inputs and code made a build; it cannot see a folder deleted,
a file truncated or a row edited by hand afterwards. ``output_files`` lists every output file with its size
and SHA-256 when the build ends (it goes into the manifest as ``files``), and ``damaged`` says which of them
are now missing or changed — ``cavpref prep`` then rebuilds instead of answering "up to date", and
evaluation refuses the folder. The hash is what catches a same-size edit (a label changed in the JSONL).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from cavpref.data_prep.tables import DEFAULT_FILENAME
from cavpref.data_prep.tasks.schema import OUTPUT_DIRS

TOP_FILES = ("stats.json", DEFAULT_FILENAME)


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _files(out: Path) -> list[Path]:
    files = [out / name for name in TOP_FILES if (out / name).is_file()]
    for d in OUTPUT_DIRS:
        for p in sorted((out / d).rglob("*")) if (out / d).is_dir() else ():
            if p.is_file() and not (p.name.startswith("cache-") and p.suffix == ".arrow"):  # datasets' caches
                files.append(p)
    return files


def output_files(out: str | Path) -> dict[str, dict]:
    """relative path -> {"size", "sha256"} of every file a build wrote (the manifest itself excepted)."""
    out = Path(out)
    return {
        p.relative_to(out).as_posix(): {"size": p.stat().st_size, "sha256": file_sha256(p)}
        for p in _files(out)
    }


def damaged(out: str | Path, manifest: dict) -> list[str]:
    """What no longer matches the manifest's file list: 'missing: X', 'changed: X' (files added later, such as
    the ``cache-*.arrow`` files ``datasets`` writes next to a loaded dataset, are not damage); a manifest
    without a file list (older builds) cannot be checked and counts as damaged, one with sizes only (before
    the hashes) is checked by size."""
    listed = manifest.get("files")
    if not isinstance(listed, dict):
        return ["the manifest has no file list"]
    out = Path(out)
    present = {p.relative_to(out).as_posix(): p for p in _files(out)}
    problems = [f"missing: {f}" for f in sorted(set(listed) - set(present))]
    for name in sorted(set(listed) & set(present)):
        want, path = listed[name], present[name]
        size = want.get("size") if isinstance(want, dict) else want
        if path.stat().st_size != size:
            problems.append(f"changed size: {name}")
        elif isinstance(want, dict) and want.get("sha256") != file_sha256(path):
            problems.append(f"changed content: {name}")
    return problems
