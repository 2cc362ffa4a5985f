"""Hostile-input pass (issue 18, #1 and #2): secrets never reach a record, a log or results.json, even when
the server echoes them back or the user puts them in the URL. Real loopback HTTP servers, the real runner."""

import json
import logging
from pathlib import Path

from cavpref.eval.backends import EndpointBackend
from cavpref.eval.pipeline import EvalArgs, evaluate
from judge_server import LoopbackServer, completion, endpoint_client

from cavpref.data import BenchmarkItem

SECRET = "sk-hostile-echoed-secret-1234567890"


def _items(tmp_path):
    four = {"A": "cat", "B": "dog", "C": "cow", "D": "None of the above"}
    items = [
        BenchmarkItem(
            f"i{n}", "MCIT", "avqa", "Existential", "Which?", four, "A", "instruction", 0, None, "A"
        )
        for n in range(2)
    ]
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(i.to_row()) + "\n" for i in items))
    return path


def _everything_written(out: Path) -> str:
    return "".join(
        p.read_text(errors="replace") for p in out.rglob("*") if p.is_file() and p.suffix != ".sqlite"
    )


def test_a_key_echoed_by_endpoint_and_judge_is_redacted_everywhere(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("CAVPREF_ENDPOINT_API_KEY", SECRET)
    monkeypatch.setenv("CAVPREF_JUDGE_API_KEY", SECRET[::-1])

    def endpoint_reply(body, n):  # every other item: 401 echoing the Authorization header
        return (
            (401, {}, {"error": f"invalid key {endpoint.requests[-1]['headers'].get('Authorization')}"}, 0)
            if n % 2
            else (200, {}, completion("I think so"), 0)
        )

    def judge_reply(body, n):
        return (
            500,
            {},
            {"error": f"upstream rejected {judge.requests[-1]['headers'].get('Authorization')}"},
            0,
        )

    endpoint, judge = LoopbackServer(endpoint_reply), LoopbackServer(judge_reply)
    try:
        client = endpoint_client(endpoint, "served")
        args = EvalArgs(
            data=str(_items(tmp_path)),
            output=str(tmp_path / "run"),
            judge_model="j",
            judge_base_url=judge.url,
            judge_max_retries=0,
        )
        with caplog.at_level(logging.DEBUG):
            res = evaluate(args, {"vanilla": True}, backend=EndpointBackend(client), rank=0, world=1)
    finally:
        endpoint.close()
        judge.close()
    assert any(SECRET in r["headers"].get("Authorization", "") for r in endpoint.requests)  # it was sent...
    written = _everything_written(tmp_path / "run")
    assert "invalid key" in written and "upstream rejected" in written  # ...the errors were recorded...
    assert SECRET not in written and SECRET[::-1] not in written  # ...but never the key
    assert SECRET not in json.dumps(res) and SECRET not in caplog.text
    assert "[REDACTED]" in written


def test_credentials_in_model_and_judge_urls_never_reach_results_json(tmp_path, monkeypatch):
    monkeypatch.delenv("CAVPREF_ENDPOINT_API_KEY", raising=False)
    endpoint = LoopbackServer(lambda body, n: (200, {}, completion("A"), 0))
    judge = LoopbackServer(lambda body, n: (200, {}, completion("A"), 0))
    host = endpoint.url.split("//")[1]
    model_url = f"http://alice:sk-url-password-77@{host}?api_key=sk-query-key-88&region=eu"
    judge_url = judge.url + "?token=sk-judge-token-99"
    try:
        args = EvalArgs(
            data=str(_items(tmp_path)),
            output=str(tmp_path / "run"),
            model=model_url,
            endpoint_model="served",
            judge_model="j",
            judge_base_url=judge_url,
            judge_max_retries=0,
        )
        res = evaluate(args, {"vanilla": True}, rank=0, world=1)
    finally:
        endpoint.close()
        judge.close()
    text = (tmp_path / "run" / "results.json").read_text() + json.dumps(res)
    for secret in ("sk-url-password-77", "sk-query-key-88", "sk-judge-token-99", "alice"):
        assert secret not in text, secret
    assert res["config"]["model"] == f"http://{host}?region=eu"  # non-secret parameters are kept
