"""Hostile-input pass (issue 18, #1 and #2): secrets never reach a record, a log or results.json, even when
the server echoes them back or the user puts them in the URL. Real loopback HTTP servers, the real runner."""

import json
import logging
from pathlib import Path

import pytest

from cavpref.chat_client import ChatClient, ChatConfig
from cavpref.data import BenchmarkItem
from cavpref.eval.backends import EndpointBackend
from cavpref.eval.pipeline import EvalArgs, NothingEvaluated, evaluate
from tests.helpers.judge_server import LoopbackServer, completion, endpoint_client

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


def test_a_key_read_with_a_trailing_carriage_return_is_sent_stripped_and_never_written(tmp_path, monkeypatch):
    """Issue 40 #19: a key with a trailing `\\r` (a Windows-edited .env) failed as an illegal header whose error
    message carried the key escaped (`…\\\\r`), past the redaction, into records.rank0.jsonl."""
    key = "sk-carriage-return-key-5678"
    monkeypatch.setenv("CAVPREF_ENDPOINT_API_KEY", key + "\r")

    def reply(body, n):  # echoes what it received, as some servers do in a 401
        return 401, {}, {"error": f"invalid key {endpoint.requests[-1]['headers'].get('Authorization')!r}"}, 0

    endpoint = LoopbackServer(reply)
    try:
        args = EvalArgs(
            data=str(_items(tmp_path)),
            output=str(tmp_path / "run"),
            model=endpoint.url,
            endpoint_model="served",
            endpoint_max_retries=0,
            no_judge=True,
        )
        with pytest.raises(NothingEvaluated):  # every item refused by the server: an error (issue 40)
            evaluate(args, {"vanilla": True}, rank=0, world=1)
    finally:
        endpoint.close()
    assert endpoint.requests and endpoint.requests[0]["headers"]["Authorization"] == f"Bearer {key}"
    written = _everything_written(tmp_path / "run")
    assert "invalid key" in written and key not in written and key[:12] not in written


def test_credential_query_parameters_and_url_user_info_stay_out_of_files_and_off_the_header(
    tmp_path, monkeypatch
):
    """Issue 40 #20 and #21: Azure Functions' `?code=` key reached results.json; `user:password@` in the URL
    replaced the configured Bearer key (the server received Basic auth); a base URL with `?api-version=…`
    got `/chat/completions` appended after its query."""
    key = "sk-configured-bearer-key-2468"
    monkeypatch.setenv("CAVPREF_ENDPOINT_API_KEY", key)
    endpoint = LoopbackServer(lambda body, n: (200, {}, completion("A"), 0))
    host = endpoint.url.split("//")[1]
    url = f"http://bob:url-password-1357@{host}?api-version=2024-06-01&code=az-function-key-9753"
    try:
        args = EvalArgs(
            data=str(_items(tmp_path)),
            output=str(tmp_path / "run"),
            model=url,
            endpoint_model="served",
            no_judge=True,
        )
        res = evaluate(args, {"vanilla": True}, rank=0, world=1)
    finally:
        endpoint.close()
    sent = endpoint.requests[0]
    assert sent["headers"]["Authorization"] == f"Bearer {key}"  # the configured key, not Basic bob:…
    assert sent["path"] == "/v1/chat/completions?api-version=2024-06-01&code=az-function-key-9753"
    written = _everything_written(tmp_path / "run") + json.dumps(res)
    for secret in ("az-function-key-9753", "url-password-1357", "bob", key):
        assert secret not in written, secret
    assert res["config"]["model"] == f"http://{host}?api-version=2024-06-01"


def test_url_user_info_is_basic_auth_only_when_no_key_is_configured(monkeypatch):
    monkeypatch.delenv("CAVPREF_JUDGE_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server = LoopbackServer(lambda body, n: (200, {}, completion("A"), 0))
    host = server.url.split("//")[1]
    try:
        with ChatClient(ChatConfig(base_url=f"http://carol:pw-5555@{host}", model="j")) as client:
            assert client.chat([{"role": "user", "content": "hi"}]).ok
    finally:
        server.close()
    assert server.requests[0]["headers"]["Authorization"] == "Basic Y2Fyb2w6cHctNTU1NQ=="  # carol:pw-5555
