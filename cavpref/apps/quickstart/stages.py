"""The resumable stage runner: every stage writes into its own folder and leaves a ``.done.json`` marker.

A finished stage is reused and an unfinished one redone, so a second ``cavpref quickstart`` (or a science
script calling the same stages from several processes) only redoes what is missing.

Output convention of the apps: stage progress is the command's user-facing output and goes to stdout through
``say`` (one ``[quickstart]`` line per event); the functions that compute data or reports never print.
"""

from __future__ import annotations

import fcntl
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cavpref import interrupts


def say(msg: str) -> None:
    """One line of the quickstart's progress on stdout (the command's output, not a log record)."""
    print(f"[quickstart] {msg}", flush=True)


class Stage:
    """A folder with a ``.done.json`` marker: a finished stage is reused, an unfinished one redone."""

    def __init__(self, root: Path, name: str):
        self.root, self.name, self.dir = root, name, root / name
        self.marker = self.dir / ".done.json"

    @property
    def done(self) -> bool:
        return self.marker.exists()

    def finish(self, **info: Any) -> None:
        self.marker.write_text(json.dumps(info, indent=1, sort_keys=True))

    def info(self) -> dict:
        return json.loads(self.marker.read_text())


class Stages:
    """Runs named stages under one root, reusing finished ones and timing the rest.

    ``stages(name, fn, *args)`` calls ``fn(cfg, stage, *args)`` unless the stage finished before, and returns
    the ``Stage`` either way (its ``dir`` is the stage's output). With ``plan`` (every stage name of the run, in
    order) each progress line says which stage of how many it is, and how long the run has taken so far."""

    def __init__(self, cfg: Any, root: Path, plan: list[str] | None = None):
        self.cfg, self.root, self.timings = cfg, root, {}
        self.plan, self.t0 = plan or [], time.perf_counter()

    def __call__(self, name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Stage:
        if name in self.plan:
            minutes, seconds = divmod(int(time.perf_counter() - self.t0), 60)
            name_shown = f"stage {self.plan.index(name) + 1} of {len(self.plan)} ({minutes}:{seconds:02d} so far): {name}"
        else:
            name_shown = name
        interrupts.check()  # a ^C swallowed while the last stage's DataLoader workers joined stops the run here
        st = Stage(self.root, name)
        if st.done:
            say(f"{name_shown}: done before, reused ({st.dir})")
            return st
        # One process runs a stage at a time: another one asking for it waits here, then reuses the result
        # (an advisory lock, outside the stage folder, released when the process dies, so a killed run never
        # leaves a stage locked).
        lock_path = self.root / ".locks" / f"{name.replace('/', '__')}.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(lock_path, "w") as lock:
            if not _try_lock(lock):
                say(f"{name_shown}: another process is running it, waiting ...")
                fcntl.flock(lock, fcntl.LOCK_EX)
            if st.done:
                say(f"{name_shown}: done by another process, reused ({st.dir})")
                return st
            say(f"{name_shown}: running ...")
            t0 = time.perf_counter()
            fn(self.cfg, st, *args, **kwargs)
            self.timings[name] = time.perf_counter() - t0
        say(f"{name_shown}: finished in {self.timings[name]:.1f} s")
        return st


def _try_lock(f) -> bool:
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
