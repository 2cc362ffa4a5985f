"""The shared chat client and the choice judge against a real HTTP server on loopback."""

import json
import sqlite3

import pytest

from cavpref.chat_client import ChatClient, ChatConfig, public_url
from cavpref.eval.benchmarks.avtrustbench.choice_judge import ChoiceJudge, build_query, parse_reply
from cavpref.eval.extract import ABSTAIN
from tests.helpers.judge_server import LoopbackServer, completion

SECRET = "sk-test-secret-do-not-write"


@pytest.fixture
def serve():
    servers = []

    def start(reply):
        servers.append(LoopbackServer(reply))
        return servers[-1]

    yield start
    for s in servers:
        s.close()


def client_for(server_url, tmp_path=None, **kw):
    cfg = {"base_url": server_url, "model": "judge-x", "backoff_s": 0.01, "timeout_s": 2.0, "max_retries": 3}
    cfg.update(kw)
    if tmp_path is not None:
        cfg["cache_path"] = str(tmp_path / "cache.sqlite")
    return ChatClient(ChatConfig(**cfg))


def test_success_sends_the_key_only_in_the_header(serve, tmp_path, monkeypatch):
    monkeypatch.setenv("CAVPREF_JUDGE_API_KEY", SECRET)
    server = serve(lambda body, n: (200, {}, completion("B"), 0))
    with client_for(server.url, tmp_path) as client:
        res = client.chat([{"role": "user", "content": "hi"}])
        described = json.dumps(client.describe())
    assert res.ok and res.text == "B" and res.attempts == 1
    req = server.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert req["body"]["model"] == "judge-x" and req["body"]["temperature"] == 0.0
    assert SECRET not in described and "judge-x" in described
    assert SECRET.encode() not in (tmp_path / "cache.sqlite").read_bytes()


def test_base_url_and_model_come_from_the_environment(serve, monkeypatch):
    server = serve(lambda body, n: (200, {}, completion("A"), 0))
    monkeypatch.setenv("CAVPREF_JUDGE_BASE_URL", server.url)
    monkeypatch.setenv("CAVPREF_JUDGE_MODEL", "env-model")
    with ChatClient(ChatConfig(backoff_s=0.01)) as client:
        assert client.chat([{"role": "user", "content": "x"}]).text == "A"
    assert server.requests[0]["body"]["model"] == "env-model"
    monkeypatch.delenv("CAVPREF_JUDGE_MODEL")
    with pytest.raises(ValueError, match="CAVPREF_JUDGE_MODEL"):
        ChatClient(ChatConfig())
    assert public_url("https://user:pw@host:8000/v1?key=1") == "https://host:8000/v1"


def test_429_with_retry_after_and_5xx_are_retried(serve):
    server = serve(
        lambda body, n: {
            1: (429, {"Retry-After": "0"}, {"error": "slow down"}, 0),
            2: (503, {}, {"error": "busy"}, 0),
        }.get(n, (200, {}, completion("C"), 0))
    )
    with client_for(server.url) as client:
        res = client.chat([{"role": "user", "content": "x"}])
        assert res.ok and res.text == "C" and res.attempts == 3 and client.stats["retries"] == 2


def test_persistent_5xx_gives_up_and_records_the_failure(serve):
    server = serve(lambda body, n: (500, {}, {"error": "boom"}, 0))
    with client_for(server.url, max_retries=2) as client:
        res = client.chat([{"role": "user", "content": "x"}])
        assert not res.ok and "gave up after 3 attempts" in res.error and "HTTP 500" in res.error
        assert len(server.requests) == 3 and client.stats["failures"] == 1


def test_timeouts_are_retried(serve):
    server = serve(lambda body, n: (200, {}, completion("D"), 0.6 if n == 1 else 0))
    with client_for(server.url, timeout_s=0.2) as client:
        res = client.chat([{"role": "user", "content": "x"}])
    assert res.ok and res.text == "D" and res.attempts == 2


@pytest.mark.parametrize(
    "payload,needle",
    [
        (b"<html>oops</html>", "not JSON"),
        ({"choices": []}, "no choices"),
        ({"choices": [{"message": {"content": 3}}]}, "content is int"),
    ],
)
def test_malformed_reply_is_recorded_not_retried_not_cached(serve, tmp_path, payload, needle):
    server = serve(lambda body, n: (200, {}, payload, 0))
    with client_for(server.url, tmp_path) as client:
        res = client.chat([{"role": "user", "content": "x"}])
        again = client.chat([{"role": "user", "content": "x"}])
    assert not res.ok and "malformed reply" in res.error and needle in res.error
    assert not again.cached and len(server.requests) == 2


def test_client_error_is_not_retried(serve):
    server = serve(lambda body, n: (400, {}, {"error": "bad request"}, 0))
    with client_for(server.url) as client:
        res = client.chat([{"role": "user", "content": "x"}])
    assert "HTTP 400" in res.error and len(server.requests) == 1


def test_server_down_is_a_recorded_connection_error(serve):
    server = serve(lambda body, n: (200, {}, completion("A"), 0))
    url = server.url
    server.close()
    with client_for(url, max_retries=1) as client:
        res = client.chat([{"role": "user", "content": "x"}])
    assert not res.ok and "connection error" in res.error


def test_cache_serves_reruns_and_is_keyed_by_model(serve, tmp_path):
    server = serve(lambda body, n: (200, {}, completion(body["messages"][0]["content"][-1]), 0))
    prompts = [[{"role": "user", "content": f"say {x}"}] for x in "ABCA"]
    with client_for(server.url, tmp_path) as client:
        first = [r.text for r in client.chat_many(prompts)]
    calls = len(server.requests)
    with client_for(server.url, tmp_path) as client:  # a new process would see the same file
        second = client.chat_many(prompts)
        assert client.stats["cache_hits"] == 4 and client.stats["http_calls"] == 0
    assert first == [r.text for r in second] == list("ABCA") and len(server.requests) == calls
    with client_for(server.url, tmp_path, model="other-judge") as client:
        assert not client.chat(prompts[0]).cached
    rows = sqlite3.connect(tmp_path / "cache.sqlite").execute("SELECT DISTINCT model FROM replies").fetchall()
    assert sorted(r[0] for r in rows) == ["judge-x", "other-judge"]


def test_concurrency_is_bounded(serve):
    server = serve(lambda body, n: (200, {}, completion("A"), 0.25))
    with client_for(server.url, max_concurrency=3) as client:
        results = client.chat_many([[{"role": "user", "content": str(i)}] for i in range(9)])
    assert all(r.ok for r in results)
    assert 2 <= server.max_inflight <= 3, server.max_inflight


# ---------------------------------------------------------------------------------------------- choice judge


def test_judge_query_adds_the_task_specific_options():
    q = build_query("Is the violin louder?", {"A": "Yes", "B": "No"}, "hmm", task="MAT")
    text = q.messages[0]["content"]
    assert q.extra_letters == ("C",) and "C. The audio is missing / I cannot answer" in text
    assert "Answer: hmm" in text and "A. Yes\nB. No\nC." in text
    q2 = build_query(
        "Q?",
        {"A": "x", "B": "y", "C": "z", "D": "None of the above"},
        "r",
        task="MCIT",
        masked_answer="guitar",
    )
    assert q2.extra_letters == ("E", "F") and "E. guitar" in q2.messages[0]["content"]
    assert build_query("Q?", {"A": "x"}, "r", task="CAT").extra_letters == ()


def test_parse_reply():
    q = build_query("Q?", {"A": "Yes", "B": "No"}, "r", task="MAT")
    assert parse_reply("B", q, None).choice == "B"
    assert parse_reply("(A).", q, None).method == "judge"
    assert parse_reply("C", q, None).choice == ABSTAIN
    assert parse_reply("C", q, "E").choice == "E"
    nm = parse_reply("No match found", q, None)
    assert nm.choice is None and nm.rule == "judge: no match"
    bad = parse_reply("Z", q, None)
    assert bad.choice is None and bad.rule.startswith("judge error")


def test_choice_judge_end_to_end_with_failures(serve, tmp_path):
    def reply(body, n):
        answer = body["messages"][0]["content"].rsplit("Answer: ", 1)[1].split("\n")[0]
        return {
            "engine": (200, {}, completion("B"), 0),
            "clarify": (200, {}, completion("No match found"), 0),
            "down": (503, {}, {"error": "x"}, 0),
        }[answer]

    server = serve(reply)
    judge = ChoiceJudge(client_for(server.url, tmp_path, max_retries=1))
    queries = [
        build_query("Q?", {"A": "Rain", "B": "Car"}, r, task="CAT") for r in ("engine", "clarify", "down")
    ]
    out = judge.judge(queries, [None] * 3)
    assert [o.choice for o in out] == ["B", None, None]
    assert out[1].rule == "judge: no match" and out[2].rule.startswith("judge error") and "503" in out[2].rule
    assert judge.describe()["prompt_version"] == "avtrustbench-choice/v1"
    judge.client.close()
