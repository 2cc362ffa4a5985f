"""One rule for every command that writes a folder: nothing of the user's is overwritten unless asked.

``cavpref prep``, ``prep merge``, ``world``, ``model``, ``train``, ``eval`` and ``quickstart`` all claim their
output folder through ``claim_output_dir`` before writing anything into it:

* ``~`` and ``$VAR`` / ``${VAR}`` are expanded (as a shell would); an unset variable is an error, never a
  folder literally named ``$HOME``;
* a folder that exists and is not empty is refused unless this command wrote it before (its marker
  ``.cavpref_output.json``, or a file only it writes: ``markers``), so a build, a training run or an
  evaluation resumes or rebuilds in its own folder but never deletes a user's files; ``overwrite_output_dir:
  true`` writes into such a folder anyway (files of the same names are replaced);
* the folder may never be, contain or lie inside an input of the command (the model being trained or
  evaluated, its data), nor lie inside a Python source checkout unless git ignores it — not even with
  ``overwrite_output_dir``: weights replaced in place or a ``README.md`` swapped for a model card cannot
  be undone;
* the main process holds an advisory lock on ``.cavpref_output.lock`` while it writes: a second run into
  the same folder fails at once, naming the process that holds it. The lock is the kernel's (``lockf``), so a
  killed run never leaves a stale one, and a forked worker does not inherit it.

Under a launcher (``accelerate launch``, ``torchrun``) only the process of global ``RANK`` 0 writes the marker
and takes the lock; the others check the same rules read-only.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

MARKER = ".cavpref_output.json"
LOCK = ".cavpref_output.lock"
_OWN_FILES = (MARKER, LOCK)
_UNSET_VAR = re.compile(r"\$(\w+|\{[^}]*\})")
_HELD: dict[str, list] = {}  # resolved folder -> [open lock file, claims in this process]


class OutputDirError(ValueError):
    """An output folder this command may not write into; the message says why and what to do."""


@dataclass
class OutputArguments:
    """The output-folder key every writing command shares."""

    overwrite_output_dir: bool = field(
        default=False,
        metadata={
            "help": "write into an existing, non-empty output folder this command did not create (files of "
            "the same names are replaced); never allowed for an input's folder or a source checkout"
        },
    )


def expand_path(path: str | os.PathLike, key: str = "output_dir") -> str:
    """``path`` with ``~`` and ``$VAR`` / ``${VAR}`` expanded; ``OutputDirError`` when a variable is unset."""
    text = os.fspath(path)
    expanded = os.path.expanduser(os.path.expandvars(text))
    unset = _UNSET_VAR.search(expanded)
    if unset or expanded.startswith("~"):
        what = f"${unset.group(1).strip('{}')} is not set" if unset else "the user of '~user' is unknown"
        raise OutputDirError(f"{key} {text!r}: {what}; give the folder's path as it should be")
    return expanded


def _is_main_process() -> bool:
    return os.environ.get("RANK", "0") == "0"


def _contents(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder) if name not in _OWN_FILES)


def _written_by(folder: Path) -> list[str]:
    try:
        return list(json.loads((folder / MARKER).read_text())["written_by"])
    except (OSError, ValueError, KeyError, TypeError):
        return []


def _check_inputs(out: Path, inputs: dict[str, str | None], key: str) -> None:
    here = out.resolve()
    for name, value in inputs.items():
        if not value or "://" in str(value):  # unset, or a URL / hub id that is not a local folder
            continue
        try:
            src = Path(expand_path(value, name)).resolve()
        except (OutputDirError, OSError, RuntimeError):
            continue
        if not src.exists():
            continue
        kind = "folder" if src.is_dir() else "file"
        if src == here or src in here.parents:
            rel = "is" if src == here else "lies inside"
            raise OutputDirError(
                f"{key} {out} {rel} the {name} {kind} {src}: the command would write over its input; "
                f"choose another {key}"
            )
        if here in src.parents:
            raise OutputDirError(
                f"{key} {out} contains the {name} {kind} {src}: the command would write over its input; "
                f"choose another {key}"
            )


def source_checkout(out: Path) -> Path | None:
    """The root of the Python source checkout (a git work tree with pyproject.toml / setup.py / setup.cfg)
    that ``out`` lies in without git ignoring it, else None (also when git is not installed)."""
    probe = out.absolute()
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():
        probe = probe.parent

    def git(*args: str) -> subprocess.CompletedProcess | None:
        try:
            return subprocess.run(
                ["git", "-C", str(probe), *args], capture_output=True, text=True, timeout=30, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None

    top = git("rev-parse", "--show-toplevel")
    if top is None or top.returncode != 0 or not top.stdout.strip():
        return None
    root = Path(top.stdout.strip())
    if not any((root / f).is_file() for f in ("pyproject.toml", "setup.py", "setup.cfg")):
        return None
    ignored = git("check-ignore", "-q", "--", str(out.absolute()) + os.sep)
    return None if ignored is not None and ignored.returncode == 0 else root


def claim_output_dir(
    path: str | os.PathLike,
    command: str,
    *,
    overwrite: bool = False,
    inputs: dict[str, str | None] | None = None,
    markers: tuple[str, ...] = (),
    key: str = "output_dir",
) -> str:
    """Check ``path`` for ``command`` (the rules in the module docstring), create it, mark it and lock it
    (main process); returns the expanded path. ``markers``: files only this command writes, so that a folder
    it made before the marker existed is still its own; ``inputs``: name -> path of the command's inputs.
    The lock is held until ``release_output_dir`` (or the process ends); a second claim of the same folder
    in this process is granted (a resumed stage, a test calling a command twice)."""
    expanded = expand_path(path, key)
    out = Path(expanded)
    _check_inputs(out, inputs or {}, key)
    checkout = source_checkout(out)
    if checkout is not None:
        raise OutputDirError(
            f"{key} {out} lies inside the source checkout {checkout} (not ignored by git): weights, "
            f"checkpoints and a model card README.md would land in the tree; write under a git-ignored "
            f"folder (e.g. runs/) or outside the checkout"
        )
    if out.exists() and not out.is_dir():
        raise OutputDirError(f"{key} {out} exists and is not a folder")
    resolved = str(out.resolve())
    if resolved in _HELD:
        _HELD[resolved][1] += 1
        return expanded
    contents = _contents(out) if out.is_dir() else []
    ours = command in _written_by(out) or any((out / m).exists() for m in markers)
    if contents and not ours and not overwrite:
        shown = ", ".join(contents[:5]) + (" …" if len(contents) > 5 else "")
        owner = _written_by(out)
        by = f" (written by `cavpref {'`, `'.join(owner)}`)" if owner else ""
        raise OutputDirError(
            f"{key} {out} exists, is not empty ({shown}) and was not created by `cavpref {command}`{by}; "
            f"choose a new or empty folder, or pass --overwrite_output_dir true to write into it "
            f"(files of the same names are replaced)"
        )
    if not _is_main_process():
        return expanded
    out.mkdir(parents=True, exist_ok=True)
    _lock(out, resolved, command, key)
    written = _written_by(out)
    if command not in written:
        tmp = out / f"{MARKER}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"written_by": [*written, command]}) + "\n")
        os.replace(tmp, out / MARKER)
    return expanded


def _lock(out: Path, resolved: str, command: str, key: str) -> None:
    try:
        import fcntl
    except ImportError:  # not POSIX: no advisory lock
        _HELD[resolved] = [None, 1]
        return
    handle = open(out / LOCK, "a+")  # noqa: SIM115 - held open while the lock is held
    try:
        # a POSIX record lock, not flock: a forked child (a DataLoader or prep worker) does not inherit it,
        # so the folder is free again as soon as this process releases it, whatever its children do
        fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        raise OutputDirError(
            f"{key} {out} is in use by {holder}: one `cavpref` run per output folder at a time; wait for "
            f"it to end or choose another {key}"
        ) from None
    except OSError:  # a file system without locks (some network mounts): write unguarded
        pass
    handle.seek(0)
    handle.truncate()
    handle.write(f"`cavpref {command}` (pid {os.getpid()})\n")
    handle.flush()
    _HELD[resolved] = [handle, 1]


def release_output_dir(path: str | os.PathLike) -> None:
    """Drop one claim of ``path`` by this process; the lock goes with the last one."""
    resolved = str(Path(path).resolve())
    held = _HELD.get(resolved)
    if held is None:
        return
    held[1] -= 1
    if held[1] <= 0:
        del _HELD[resolved]
        if held[0] is not None:
            held[0].close()  # closing the file releases the lock


@contextmanager
def output_dir(path: str | os.PathLike, command: str, **kwargs) -> Iterator[str]:
    """``claim_output_dir`` for the length of a ``with`` block (library functions that write a folder)."""
    claimed = claim_output_dir(path, command, **kwargs)
    try:
        yield claimed
    finally:
        release_output_dir(claimed)


GENERATOR = (
    '<meta name="generator" content="cavpref">'  # in every HTML page cavpref writes: it may replace them
)


def check_output_file(
    path: str | os.PathLike,
    key: str,
    *,
    inputs: dict[str, str] | None = None,
    overwrite: bool = False,
    ours: bool | None = None,
) -> Path:
    """The file rule of the module: a file a command writes (``eval compare --html / --output / --plot``) may
    not be a folder, nor an existing file of an input's folder (a compared run's ``report.html`` or
    ``results.json``: never, not even with ``overwrite``), nor another existing file unless ``overwrite`` or
    it is ``ours`` (default: an HTML page with cavpref's ``GENERATOR`` tag). Returns the expanded path."""
    out = Path(expand_path(path, key))
    if out.is_dir():
        raise OutputDirError(
            f"{key} {out} is a folder; give the path of a file to write (e.g. {out}/page.html)"
        )
    if not out.exists():
        return out
    here = out.resolve()
    for name, value in (inputs or {}).items():
        src = Path(expand_path(value, name)).resolve()
        if src.is_dir() and src in here.parents:
            raise OutputDirError(
                f"{key} {out} is a file of the {name} folder {src} (an input of this command); write it "
                "elsewhere"
            )
    if ours is None:
        try:
            with open(out, encoding="utf-8", errors="replace") as f:
                ours = GENERATOR in f.read(4096)
        except OSError:
            ours = False
    if not (ours or overwrite):
        raise OutputDirError(
            f"{key} {out} exists and was not written by cavpref; choose a new file, or pass --overwrite true "
            "to replace it"
        )
    return out
