"""The file list of a prep output folder, so that "up to date" means the files are really there.

The manifest's fingerprint says which config, inputs and code made a build; it cannot see a folder deleted
or a file truncated afterwards. ``output_files`` lists every output file with its size when the build ends
(it goes into the manifest as ``files``), and ``damaged`` says which of them are now missing or changed —
``cavpref prep`` then rebuilds instead of answering "up to date", and evaluation refuses the folder.
"""

from __future__ import annotations

from pathlib import Path

from cavpref.data_prep.tables import DEFAULT_FILENAME
from cavpref.data_prep.tasks.schema import OUTPUT_DIRS

TOP_FILES = ("stats.json", DEFAULT_FILENAME)


def output_files(out: str | Path) -> dict[str, int]:
    """relative path -> size in bytes of every file a build wrote (the manifest itself excepted)."""
    out = Path(out)
    files = {name: (out / name).stat().st_size for name in TOP_FILES if (out / name).is_file()}
    for d in OUTPUT_DIRS:
        for p in sorted((out / d).rglob("*")) if (out / d).is_dir() else ():
            if p.is_file() and not (
                p.name.startswith("cache-") and p.suffix == ".arrow"
            ):  # datasets' own caches
                files[p.relative_to(out).as_posix()] = p.stat().st_size
    return files


def damaged(out: str | Path, manifest: dict) -> list[str]:
    """What no longer matches the manifest's file list: 'missing: X', 'changed size: X' (files added later,
    such as the ``cache-*.arrow`` files ``datasets`` writes next to a loaded dataset, are not damage); a
    manifest without a file list (older builds) cannot be checked and counts as damaged."""
    listed = manifest.get("files")
    if not isinstance(listed, dict):
        return ["the manifest has no file list"]
    now = output_files(out)
    problems = [f"missing: {f}" for f in sorted(set(listed) - set(now))]
    problems += [f"changed size: {f}" for f in sorted(set(listed) & set(now)) if listed[f] != now[f]]
    return problems
