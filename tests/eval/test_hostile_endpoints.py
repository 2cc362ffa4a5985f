"""Hostile-input pass (issue 18, #13): an endpoint that never answers, and one that answers 6 MB. Timeouts and
retries are options (CLI and YAML: EvalArgs fields); a reply's stored size is capped."""

import json
from pathlib import Path

import pytest

from cavpref.data import BenchmarkItem
from cavpref.eval.pipeline import EvalArgs, NothingEvaluated, evaluate
from tests.helpers.judge_server import LoopbackServer, completion


def _items(tmp_path, n=1):
    four = {"A": "cat", "B": "dog", "C": "cow", "D": "None of the above"}
    items = [
        BenchmarkItem(
            f"i{k}", "MCIT", "avqa", "Existential", "Which?", four, "A", "instruction", 0, None, "A"
        )
        for k in range(n)
    ]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(i.to_row()) + "\n" for i in items))
    return path


def _all_skipped(args):
    """A run whose every item fails is an error (issue 40); its results.json is written all the same."""
    with pytest.raises(NothingEvaluated, match="none of the 1 items was evaluated"):
        evaluate(args, {"vanilla": True}, rank=0, world=1)
    return json.loads(Path(args.output, "results.json").read_text())


def test_endpoint_timeout_and_retries_are_options(tmp_path):
    server = LoopbackServer(lambda body, n: (200, {}, completion("A"), 3.0))  # answers far too late
    try:
        args = EvalArgs(
            data=str(_items(tmp_path)),
            output=str(tmp_path / "run"),
            model=server.url,
            endpoint_model="m",
            no_judge=True,
            endpoint_timeout_s=0.3,
            endpoint_max_retries=1,
        )
        res = _all_skipped(args)
    finally:
        server.close()
    assert len(server.requests) == 2  # one try + one retry, each cut at 0.3 s (the record says so)
    assert res["metrics"]["counts"]["skip_reasons"] == {"endpoint: gave up after 2 attempts": 1}
    assert "timeout after 0.3s" in (tmp_path / "run" / "records.rank0.jsonl").read_text()


def test_a_huge_reply_is_not_stored_whole(tmp_path):
    huge = completion("A" + " and so on" * 600_000)  # ~6 MB
    server = LoopbackServer(lambda body, n: (200, {}, huge, 0))
    try:
        args = EvalArgs(
            data=str(_items(tmp_path)),
            output=str(tmp_path / "run"),
            model=server.url,
            endpoint_model="m",
            no_judge=True,
            max_reply_bytes=100_000,
        )
        res = _all_skipped(args)
    finally:
        server.close()
    records = (tmp_path / "run" / "records.rank0.jsonl").read_text()
    assert len(records) < 20_000 and "larger than 100000 bytes" in records
    assert sum(res["metrics"]["counts"]["skip_reasons"].values()) == 1


def test_the_timeout_bounds_the_whole_reply_not_each_read(tmp_path):
    """Issue 40 #23: a server sending one byte every 0.5 s took 91 s under `--endpoint_timeout_s 3`: the limit
    bounded each read, not the reply."""
    import socket
    import threading
    import time

    body = json.dumps(completion("A")).encode()
    served = []

    def trickle():  # a real HTTP server: the headers at once, then the body one byte per 0.25 s
        while True:
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            served.append(time.monotonic())
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
            conn.sendall(f"Content-Length: {len(body)}\r\n\r\n".encode())
            try:
                for b in body:
                    conn.sendall(bytes([b]))
                    time.sleep(0.25)
            except OSError:
                pass
            conn.close()

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(4)
    threading.Thread(target=trickle, daemon=True).start()
    try:
        args = EvalArgs(
            data=str(_items(tmp_path)),
            output=str(tmp_path / "run"),
            model=f"http://127.0.0.1:{sock.getsockname()[1]}/v1",
            endpoint_model="m",
            no_judge=True,
            endpoint_timeout_s=1.0,
            endpoint_max_retries=0,
        )
        start = time.monotonic()
        res = _all_skipped(args)
        seconds = time.monotonic() - start
    finally:
        sock.close()
    assert len(body) * 0.25 > 20  # the whole reply would take that long
    assert len(served) == 1 and seconds < 10
    assert res["metrics"]["counts"]["skip_reasons"] == {"endpoint: gave up after 1 attempts": 1}
    assert "timeout after 1.0s" in (tmp_path / "run" / "records.rank0.jsonl").read_text()
