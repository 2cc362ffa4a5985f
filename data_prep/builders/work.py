"""The build folder and its resumable stages.

A build is a chain of stages over units (a clip to caption, a video to segment, a trajectory to turn into a
question). Each finished unit is one small JSON file, ``<out>/work/<stage>/<unit>.json``, written atomically
and holding the hash of everything that went into it (``key``): a rerun loads it instead of recomputing,
and a changed input or setting (another model, prompt or clip) simply misses and is recomputed. Model calls
are answered by the build's reply cache on top of that, so a unit interrupted half-way (``kill -9``) repeats
no call that had finished. A unit whose model call failed is *counted* (stage, reason) and left undone: the
next run asks again; nothing is silently skipped.

The folder itself is claimed like every output folder (``cavpref.output_dir``): ``--out`` must be new, empty,
or an earlier build of the same builder; it may not lie inside ``--videos`` (the build would read its own
clips) nor hold it, and one build writes into it at a time. Inputs are never written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

BUILD_FILE = "build.json"


class BuildError(ValueError):
    """A build that cannot start or go on (bad folder, bad input file); the message names the path."""


class StepFailed(Exception):
    """A unit that could not be finished this run; ``reason`` is what the stats count."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


def setting(help: str, **kw) -> Any:
    """A field of a builder's config dataclass with its ``--help`` text."""
    return field(metadata={"help": help}, **kw)


def key_of(*parts: Any) -> str:
    """A stable hash of JSON-able inputs: a unit's identity in its stage."""
    blob = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def write_json(path: Path, value: Any, indent: int | None = 2) -> None:
    """Write ``value`` as JSON atomically (a temporary file renamed over ``path``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(value, f, ensure_ascii=False, indent=indent)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text(path: Path, text: str) -> None:
    """Write ``text`` atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def public_settings(*configs: Any) -> dict[str, Any]:
    """The settings of a build as ``build.json`` records them: every field of the config dataclasses, base
    URLs without user info or query (they may carry credentials; the key itself is only ever read from the
    environment variable ``api_key_env`` names)."""
    from dataclasses import asdict

    from cavpref.chat_client import public_url

    out: dict[str, Any] = {}
    for config in configs:
        for k, v in asdict(config).items():
            out[k] = public_url(v) if k.endswith("base_url") and isinstance(v, str) else v
    return out


def begin_build(builder: str, cfg: Any, ep: Any, prompt_version: str) -> tuple[Path, Path, Stages]:
    """Check the settings (every role's model), the folders and earlier builds, record the settings;
    (build folder, videos folder, the build's stage store)."""
    if not cfg.videos or not cfg.out:
        raise BuildError(f"cavpref build {builder} needs --videos DIR and --out DIR")
    ep.check()
    settings = {**public_settings(cfg, ep), "prompt_version": prompt_version}
    out = prepare_out(cfg.out, cfg.videos, builder, settings, overwrite=cfg.overwrite_output_dir)
    try:  # the folders first (local, instant), then the servers, before any stage runs
        ep.check_servers()
    except BaseException:
        from cavpref.output_dir import release_output_dir

        release_output_dir(out)
        raise
    return out, Path(cfg.videos).resolve(), Stages(out)


def prepare_out(
    out: str | os.PathLike, videos: str | os.PathLike, builder: str, config: dict, overwrite: bool = False
) -> Path:
    """Claim ``--out`` (``cavpref.output_dir``: new, empty or an earlier build of this builder; never inside
    ``--videos`` nor holding it; locked while the build runs), then record this build's settings."""
    from cavpref.output_dir import OutputDirError, claim_output_dir

    videos = Path(videos).resolve()
    if not videos.is_dir():
        raise BuildError(f"--videos {videos}: not a folder")
    try:
        claimed = claim_output_dir(
            out, f"build {builder}", overwrite=overwrite, inputs={"--videos": str(videos)}, key="--out"
        )
    except OutputDirError as err:
        raise BuildError(str(err)) from None
    out = Path(claimed).resolve()
    write_json(out / BUILD_FILE, {"builder": builder, "videos": str(videos), "config": config})
    return out


@dataclass(frozen=True)
class Unit:
    """One piece of a stage's work: ``id`` names it (and its file), ``key`` is the hash of its inputs."""

    id: str
    key: str
    payload: Any = None


class Stages:
    """The stage store of one build folder."""

    def __init__(self, out: Path):
        self.root = Path(out) / "work"
        self.stats: dict[str, dict[str, Any]] = {}

    @property
    def cache_path(self) -> str:
        """The build's one reply cache (``cavpref.cache`` SQLite), shared by every role's client."""
        return str(self.root / "cache.sqlite")

    def _path(self, stage: str, unit: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", unit)[:96]
        return self.root / stage / f"{safe}.{hashlib.sha1(unit.encode()).hexdigest()[:10]}.json"

    def load(self, stage: str, unit: Unit) -> Any | None:
        path = self._path(stage, unit.id)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data["value"] if isinstance(data, dict) and data.get("key") == unit.key else None

    def forget(self, stage: str, unit: Unit) -> None:
        """Drop a finished unit (its product was deleted since): the next ``run`` redoes it."""
        self._path(stage, unit.id).unlink(missing_ok=True)

    def save(self, stage: str, unit: Unit, value: Any) -> None:
        write_json(self._path(stage, unit.id), {"id": unit.id, "key": unit.key, "value": value}, indent=None)

    def run(
        self,
        stage: str,
        units: Sequence[Unit],
        work: Callable[[Unit], Any],
        *,
        workers: int = 1,
    ) -> dict[str, Any]:
        """``work(unit)`` for every unit not finished before; returns ``{unit.id: value}`` of the finished
        ones. ``StepFailed`` (or any ``ValueError`` / ``OSError`` of the unit's inputs) leaves the unit
        undone and counts it under ``stats[stage]["failed"][reason]``."""
        done: dict[str, Any] = {}
        failed: Counter = Counter()
        errors: dict[str, str] = {}
        todo = []
        for unit in units:
            value = self.load(stage, unit)
            if value is None:
                todo.append(unit)
            else:
                done[unit.id] = value
        reused = len(done)

        def one(unit: Unit):
            try:
                value = work(unit)
            except StepFailed as err:
                return unit, None, err.reason, str(err)
            except (ValueError, OSError) as err:
                return unit, None, type(err).__name__, f"{type(err).__name__}: {err}"
            self.save(stage, unit, value)
            return unit, value, None, None

        bar = tqdm(total=len(units), initial=reused, desc=stage, unit="unit", leave=False, disable=not units)
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for unit, value, reason, detail in pool.map(one, todo):
                bar.update(1)
                if reason is None:
                    done[unit.id] = value
                else:
                    failed[reason] += 1
                    errors[unit.id] = detail
        bar.close()
        self.stats[stage] = {
            "units": len(units),
            "finished": len(done),
            "reused": reused,
            "failed": dict(sorted(failed.items())),
            "errors": dict(sorted(errors.items())[:20]),
        }
        return done
