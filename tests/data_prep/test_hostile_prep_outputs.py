"""Hostile-input pass (issue 18), prep outputs: a killed `prep merge` into an existing build (#6), eval on the
folder of a killed prep (#7), a build with folders deleted (#8). Real builds of a small synthetic world."""

from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path

import pytest

from cavpref.data_prep.build import PrepConfig, build, merge
from cavpref.data_prep.build import pipeline as build_module
from cavpref.eval.benchmarks.avtrustbench.reader import DataError, load_items

merge_module = importlib.import_module(
    "cavpref.data_prep.build.merge"
)  # the package's `merge` is the function

TASKS = ["CLEAN", "MCIT", "MAT"]


def cfg(world, out, **kw):
    return PrepConfig(
        world=str(world), output_dir=str(out), progress=False, tasks=TASKS, formats=["arrow", "jsonl"], **kw
    )


class Killed(BaseException):
    """What a kill -9 amounts to for the code under test: it stops in the middle of writing the outputs."""


def dying_write(real):
    def write(out, items, prefs, tasks, splits, formats=("arrow",)):
        real(out, items, prefs, list(tasks)[:1], splits, formats)  # the first task written, then the kill
        raise Killed

    return write


def test_killed_merge_into_an_existing_build_is_not_up_to_date(world, tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert build(cfg(world, out))["up_to_date"] is False
    for i in range(2):
        build(cfg(world, tmp_path / f"shard{i}", num_shards=2, shard_index=i))
    monkeypatch.setattr(merge_module, "write_outputs", dying_write(merge_module.write_outputs))
    with pytest.raises(Killed):
        merge(out, [str(tmp_path / "shard0"), str(tmp_path / "shard1")])
    monkeypatch.undo()
    again = build(cfg(world, out))
    assert again["up_to_date"] is False  # before the fix: "up to date" with 2 of the 3 tasks missing
    assert sorted(p.name for p in (out / "benchmark").iterdir()) == sorted(TASKS)


@pytest.mark.parametrize("damage", ["delete_folder", "truncate_file", "delete_jsonl"])
def test_a_build_with_outputs_deleted_or_changed_is_rebuilt(world, tmp_path, damage):
    out = tmp_path / "out"
    build(cfg(world, out))
    (out / "preferences" / "train" / "cache-0123abcd.arrow").write_bytes(b"x")  # what datasets.select writes
    assert build(cfg(world, out))["up_to_date"] is True
    if damage == "delete_folder":
        shutil.rmtree(out / "benchmark" / "MAT")
    elif damage == "delete_jsonl":
        shutil.rmtree(out / "jsonl" / "preferences")
    else:
        victim = next((out / "preferences").rglob("*.arrow"))
        victim.write_bytes(victim.read_bytes()[:100])
    again = build(cfg(world, out))
    assert again["up_to_date"] is False  # before the fix: "up to date"
    assert (out / "benchmark" / "MAT").is_dir() and any((out / "jsonl" / "preferences").iterdir())
    assert build(cfg(world, out))["up_to_date"] is True


def test_eval_refuses_the_folder_of_a_killed_or_damaged_prep(world, tmp_path, monkeypatch):
    out = tmp_path / "out"
    monkeypatch.setattr(build_module, "write_outputs", dying_write(build_module.write_outputs))
    with pytest.raises(Killed):
        build(cfg(world, out))
    monkeypatch.undo()
    assert (out / "benchmark" / "CLEAN").is_dir() and not (out / "manifest.json").exists()
    with pytest.raises(DataError, match="incomplete prep build.*manifest.json"):
        load_items(out)  # before the fix: loaded, and the other tasks listed as "no items"
    build(cfg(world, out))
    assert load_items(out).items  # a finished build loads
    shutil.rmtree(out / "benchmark" / "MAT")
    with pytest.raises(DataError, match="missing: benchmark/MAT"):
        load_items(out)


def test_llm_negatives_against_a_failing_endpoint_are_counted_or_an_error(world, tmp_path):
    from cavpref.data_prep.build import format_stats
    from cavpref.data_prep.tasks.common import TaskError
    from tests.helpers.judge_server import LoopbackServer

    server = LoopbackServer(lambda body, n: (401, {}, {"error": "invalid api key"}, 0))
    try:
        llm = {"negatives": "llm", "llm_base_url": server.url, "llm_model": "writer"}
        stats = build(
            PrepConfig(
                world=str(world),
                output_dir=str(tmp_path / "out"),
                progress=False,
                tasks=["COT-Stitch"],
                formats=["jsonl"],
                **llm,
            )
        )
        made = stats["tasks"]["COT-Stitch"]["generated"]
        assert made > 0 and server.requests
        saved = json.loads((tmp_path / "out" / "stats.json").read_text())
        assert saved["tasks"]["COT-Stitch"]["llm_fallback"] == {"llm endpoint error (HTTP 401)": made}
        assert f"llm fallback {made:>5}  llm endpoint error (HTTP 401)" in format_stats(
            stats, ["train", "test"]
        )
        with pytest.raises(TaskError, match="HTTP 401.*llm_on_failure"):
            build(
                PrepConfig(
                    world=str(world),
                    output_dir=str(tmp_path / "strict"),
                    progress=False,
                    tasks=["COT-Stitch"],
                    formats=["jsonl"],
                    llm_on_failure="error",
                    **llm,
                )
            )
    finally:
        server.close()


def _children(pid: int) -> list[int]:
    import os

    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="reads /proc")
def test_kill_9_of_prep_with_workers_takes_the_workers_down(world, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    cmd = [
        sys.executable,
        "-m",
        "cavpref.apps.cli",
        "prep",
        "--world",
        str(world),
        "--output_dir",
        str(tmp_path / "out"),
        "--num_proc",
        "2",
        "--progress",
        "false",
        "--formats",
        "jsonl",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    workers = []
    for _attempt in range(3):  # the pool lives for a second or two: catch it alive
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while proc.poll() is None and time.time() < deadline:
            workers = _children(proc.pid)
            if len(workers) >= 2:
                break
            time.sleep(0.005)
        if len(workers) >= 2 and proc.poll() is None:
            break
        proc.wait()
    assert len(workers) >= 2, "never saw the two workers"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.time() + 10
    while any(_alive(w) for w in workers) and time.time() < deadline:
        time.sleep(0.05)
    left = [w for w in workers if _alive(w)]
    for w in left:  # do not leave them behind when the test fails
        os.kill(w, signal.SIGKILL)
    assert not left, f"workers {left} outlived their killed parent"
