"""Requests an endpoint cannot tell apart get its replies in their own order (issue 57, item 2).

Under ``cavpref eval mmar --protocol official`` an item's five raters send identical requests (seed 42), as
MMAR's released ``code/evaluation_rubrics.py`` does — one after another (``for rater_id in range(NUM_RATERS):
await scorer.call(...)``), so rater k holds the judge's k-th reply to that request. They used to be sent at
once, and which reply went to which rater depended on which request reached the judge first: the "runs"
reading (run j = every item's j-th rating) changed on every fresh run. The judge here answers a request
from a fixed per-request sequence, after a random network delay, on real loopback HTTP.
"""

import json
import random
import threading
import time
from collections import defaultdict

import pytest

from cavpref.chat_client import ChatClient, ChatConfig
from cavpref.chat_json import ask
from cavpref.eval.benchmarks.mmar import data as mmar
from cavpref.eval.benchmarks.mmar.data import MMARRecord, mmar_metrics
from cavpref.eval.benchmarks.mmar.judge import MMARJudge, ratings_of, score
from tests.helpers.judge_server import LoopbackServer, completion

RUBRIC = [
    {"name": f"Criterion {i}", "scoring_point": f"Award 1 point if step {i} is stated.", "choices": [0, 1]}
    for i in range(1, 6)
]


def _items(tmp_path, n=12):
    rows = [
        {
            "id": f"r{i}",
            "audio_path": f"audio/r{i}.wav",
            "question": f"Where might music {i} come from?",
            "choices": ["Mountain Canyon", "Open Grassland"],
            "answer": "Open Grassland",
            "modality": "music",
            "category": "Cultural Layer",
            "sub-category": "Professional Knowledge and Reasoning",
            "thinking": "Throat singing carries over open land.",
            "cue": [],
            "rubric": RUBRIC,
        }
        for i in range(n)
    ]
    path = tmp_path / "MMAR-meta.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return mmar.read(path)


def sequence(body) -> list[int]:
    """The judge's replies to one request body, in the order it answers them (criteria satisfied)."""
    key = json.dumps([body["messages"], body.get("seed")], sort_keys=True)
    return random.Random(key).sample(range(6), 5)


class SequencedJudge:
    """A judge that answers the m-th arrival of a body with ``sequence(body)[m]``, each request first delayed
    by a random 0-30 ms (what reaches the judge first is not what was sent first)."""

    def __init__(self):
        self.seen, self.lock, self.jitter = defaultdict(int), threading.Lock(), random.Random()
        self.server = LoopbackServer(self.reply)

    def reply(self, body, n):
        time.sleep(self.jitter.uniform(0, 0.03))
        key = json.dumps([body["messages"], body.get("seed")], sort_keys=True)
        with self.lock:
            m, self.seen[key] = self.seen[key], self.seen[key] + 1
        satisfied = sequence(body)[m % 5]
        return 200, {}, completion(json.dumps([{"score": int(i < satisfied)} for i in range(5)])), 0.005


@pytest.fixture
def judge():
    j = SequencedJudge()
    yield j
    j.server.close()


def test_official_raters_get_the_judges_replies_in_rater_order(tmp_path, judge):
    items = _items(tmp_path)
    answers, reasonings = ["Open Grassland"] * len(items), ["Throat singing carries."] * len(items)
    metrics = []
    for run in range(3):  # three fresh runs, each with its own cache
        judge.seen.clear()
        cfg = ChatConfig(base_url=judge.server.url, model="j", cache_path=str(tmp_path / f"c{run}.sqlite"))
        with ChatClient(cfg) as client:
            recs = score(items, answers, reasonings, MMARJudge(client, protocol="official"))
        bodies = {}
        for r in judge.server.requests:
            bodies[r["body"]["messages"][1]["content"]] = r["body"]
        for item, rec in zip(items, recs):
            body = next(b for text, b in bodies.items() if item.question in text)
            # rater k holds the judge's k-th reply, as the released script's sequential loop gets it
            assert ratings_of(rec) == tuple(s / 5 for s in sequence(body)), item.id
        records = [MMARRecord(it.id, True, ratings_of(r), it.task) for it, r in zip(items, recs)]
        metrics.append(mmar_metrics(records)["runs"]["overall"])
    assert metrics[0] == metrics[1] == metrics[2]


def test_identical_requests_are_sent_in_turn_and_distinct_ones_at_once(tmp_path, judge):
    """``ask`` sends requests with the same messages and seed one after another, in their order (their
    tags only name their cache entries), and different requests concurrently."""
    same = [{"role": "user", "content": "same"}]
    requests = [(same, 7, f"rater {k}") for k in range(5)]
    requests += [([{"role": "user", "content": f"other {i}"}], 7) for i in range(6)]
    with ChatClient(ChatConfig(base_url=judge.server.url, model="j")) as client:
        replies = ask(client, requests, lambda i, text: json.loads(text), max_tokens=8)
    body = next(r["body"] for r in judge.server.requests if r["body"]["messages"] == same)
    got = [sum(s["score"] for s in rep.value) for rep in replies[:5]]
    assert got == sequence(body)
    assert judge.server.max_inflight > 1  # the distinct requests still overlapped
