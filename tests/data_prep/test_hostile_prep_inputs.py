"""Second hostile-input pass (issue 40), data prep: a shard merged twice (#10), a same-size hand edit of an
output (#11), secrets of the LLM endpoint in the manifest (#18), an LLM endpoint that is down (#24), symlink
loops among the media and JSON nested too deeply (#25). Real builds of a small synthetic world, real sockets."""

from __future__ import annotations

import json
import os
import shutil
import socket
import threading
import time

import pytest

from cavpref.apps.cli import main as cavpref_main
from cavpref.data_prep.build import PrepConfig, build, merge
from cavpref.eval.benchmarks.avtrustbench.reader import DataError, load_items
from tests.helpers.judge_server import LoopbackServer, completion

TASKS = ["CLEAN", "MCIT"]


def cfg(world, out, **kw):
    return PrepConfig(
        world=str(world),
        output_dir=str(out),
        progress=False,
        formats=["arrow", "jsonl"],
        **{"tasks": TASKS, **kw},
    )


def test_a_shard_listed_twice_is_refused_not_merged_twice(world, tmp_path):
    """#10: `prep merge` with one shard listed twice wrote every row of that shard twice, counted as generated."""
    for i in range(2):
        build(cfg(world, tmp_path / f"shard{i}", num_shards=2, shard_index=i))
    s0, s1 = str(tmp_path / "shard0"), str(tmp_path / "shard1")
    for shards in ([s0, s0, s1], [s0, s1, f"{tmp_path}/./shard0/"]):
        with pytest.raises(ValueError, match="listed twice"):
            merge(tmp_path / "merged", shards)
    assert not (tmp_path / "merged").exists()
    shutil.copytree(s0, tmp_path / "copy0")  # the same shard under another name: its rows would repeat
    (tmp_path / "copy0" / "manifest.json").write_text(
        (tmp_path / "shard1" / "manifest.json").read_text()  # claiming to be shard 1
    )
    with pytest.raises(ValueError, match=r"occur in more than one shard"):
        merge(tmp_path / "merged", [s0, str(tmp_path / "copy0")])
    stats = merge(tmp_path / "merged", [s1, s0])
    rows = (tmp_path / "merged" / "jsonl" / "preferences" / "train.jsonl").read_text().splitlines()
    ids = [json.loads(r)["id"] for r in rows]
    assert len(ids) == len(set(ids)) == stats["preferences"]["train"]


def test_a_same_size_hand_edit_of_an_output_is_noticed(world, tmp_path):
    """#11: the manifest listed sizes only, so a same-size edit of the JSONL export was "up to date"."""
    out = tmp_path / "out"
    build(cfg(world, out))
    victim = out / "jsonl" / "benchmark" / "MCIT" / "test.jsonl"
    text = victim.read_text()
    option = json.loads(text.splitlines()[0])["option_texts"][0]  # an option's text, edited by hand
    edited = text.replace(
        json.dumps(option), json.dumps(option[:-1] + ("x" if option[-1] != "x" else "y")), 1
    )
    assert len(edited.encode()) == len(text.encode()) and edited != text
    victim.write_text(edited)
    with pytest.raises(DataError, match="changed content: jsonl/benchmark/MCIT/test.jsonl"):
        load_items(out)  # evaluation refuses the folder
    assert build(cfg(world, out))["up_to_date"] is False  # prep rebuilds it
    assert victim.read_text() == text and load_items(out).items


SECRET_KEY = "sk-prep-llm-key-0123456789"


def test_the_llm_endpoints_credentials_never_reach_a_prep_output(world, tmp_path, monkeypatch):
    """#18: prep wrote `llm_base_url` verbatim (password and api key included) into manifest.json."""
    monkeypatch.setenv("PREP_LLM_KEY", SECRET_KEY)
    server = LoopbackServer(lambda body, n: (200, {}, completion('["x a", "x b", "x c"]'), 0))
    host = server.url.split("//")[1]
    url = f"http://writer:pw-in-the-url-42@{host}?api_key=sk-query-key-43&code=az-func-code-44&region=eu"
    try:
        build(
            cfg(
                world,
                tmp_path / "out",
                tasks=["COT-Stitch"],
                negatives="llm",
                llm_base_url=url,
                llm_model="writer",
                llm_api_key_env="PREP_LLM_KEY",
            )
        )
    finally:
        server.close()
    assert server.requests and all(
        r["headers"]["Authorization"] == f"Bearer {SECRET_KEY}" for r in server.requests
    )
    written = "".join(p.read_text(errors="replace") for p in (tmp_path / "out").rglob("*") if p.is_file())
    for secret in (SECRET_KEY, "pw-in-the-url-42", "sk-query-key-43", "az-func-code-44"):
        assert secret not in written, secret
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["config"]["llm_base_url"] == f"http://{host}?region=eu"  # what is not a secret stays


class DownEndpoint:
    """An endpoint that is down: it accepts a connection and closes it at once; counts the connections."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.connections, self.running = 0, True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self):
        self.running = False
        self.thread.join()
        self.sock.close()


def test_prep_against_an_llm_endpoint_that_is_down_gives_up_at_once(world, tmp_path):
    """#24: with the negatives' endpoint down prep retried every record for ~17 s (12 records: 222 s)."""
    from cavpref.data_prep.tasks.common import TaskError

    down = DownEndpoint()
    keys = dict(
        tasks=["COT-Stitch"], negatives="llm", llm_base_url=down.url, llm_model="m", llm_max_retries=1
    )
    try:
        start = time.monotonic()
        stats = build(cfg(world, tmp_path / "out", **keys))
        seconds = time.monotonic() - start
        made = stats["tasks"]["COT-Stitch"]["generated"]
        fallback = stats["tasks"]["COT-Stitch"]["llm_fallback"]
        assert made > 1 and sum(fallback.values()) == made  # every record fell back, and was counted
        # the requests sent together (prefetch) each try twice; once found down, no record is sent again
        assert down.connections <= 2 * made
        assert seconds < 30
        before = down.connections
        with pytest.raises(TaskError, match="llm_on_failure"):
            build(cfg(world, tmp_path / "strict", llm_on_failure="error", **keys))
        assert down.connections - before <= 2 * made
    finally:
        down.close()


def test_a_symlink_loop_among_the_media_is_a_counted_skip_or_a_one_line_error(world, tmp_path, capsys):
    """#25: a symlink loop among the media crashed prep with a raw traceback, even with `on_error: skip`."""
    media = tmp_path / "media"
    shutil.copytree(world, media, symlinks=True)
    videos = sorted((media / "music_avqa" / "videos").iterdir())
    a, b = videos[0], media / "music_avqa" / "videos" / "loop_b.mp4"
    a.unlink()
    a.symlink_to(b)
    b.symlink_to(a)
    stats = build(cfg(media, tmp_path / "skipped", on_error="skip", tasks=["CLEAN"]))
    reason = "media: media path cannot be resolved"
    assert stats["invalid_skipped"].get(reason, 0) >= 1 and stats["records_reconcile"]
    argv = ["prep", "--world", str(media), "--output_dir", str(tmp_path / "raised"), "--tasks", "CLEAN"]
    assert cavpref_main([*argv, "--progress", "false"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and a.name in err and "Symlink loop" in err and "Traceback" not in err


def test_json_nested_too_deeply_names_the_file_and_a_nested_field_is_skipped(world, tmp_path, capsys):
    """#25: a deeply nested annotation JSON gave a bare RecursionError naming no file."""
    deep = tmp_path / "music_avqa" / "json" / "avqa-train.json"
    deep.parent.mkdir(parents=True)
    deep.write_text("[" * 200_000 + "]" * 200_000)
    argv = [
        "prep",
        "--music_avqa",
        str(deep),
        "--output_dir",
        str(tmp_path / "out"),
        "--check_media",
        "false",
    ]
    assert cavpref_main([*argv, "--progress", "false"]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(deep) in err and "nested too deeply" in err
    # one record's field nested too deeply: that record is skipped and counted under on_error: skip
    media = tmp_path / "media"
    shutil.copytree(world, media)
    src = min((media / "music_avqa" / "json").glob("avqa-*.json"))
    records = json.loads(src.read_text())
    records[0]["type"] = "[" * 200_000 + "]" * 200_000
    src.write_text(json.dumps(records))
    stats = build(cfg(media, tmp_path / "skip", on_error="skip", tasks=["CLEAN"]))
    assert stats["reader_skipped"] == {"music_avqa: type: JSON nested too deeply to read": 1}
    assert os.path.isfile(tmp_path / "skip" / "manifest.json")
