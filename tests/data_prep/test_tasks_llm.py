"""COT-Stitch negatives from an OpenAI-compatible endpoint: a real HTTP server started by the test."""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from cavpref.data_prep.tasks import GENERATORS, LLMConfig, TaskOptions
from cavpref.data_prep.tasks.llm import parse_negatives
from tests.helpers.task_records import CAT, COW, DOG, SIREN, make_tables


class _Handler(BaseHTTPRequestHandler):
    mode: ClassVar[str] = "good"
    requests: ClassVar[list] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(body)
        a, b = re.search(r'first "(.*?)", then "(.*?)"', body["messages"][-1]["content"]).groups()
        negs = [f"{b} is followed by {a}.", f"{a} and {b} play together.", f"{a} is preceded by {b}."]
        content = json.dumps(negs) if type(self).mode == "good" else "Sure! Here are some options: ..."
        reply = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture()
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Handler.requests = []
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("mode", ["good", "garbage"])
def test_llm_negatives(server, tmp_path, mode, monkeypatch):
    monkeypatch.setattr(_Handler, "mode", mode)
    options = TaskOptions(
        negatives="llm",
        llm=LLMConfig(base_url=server, model="tiny-judge", cache_path=str(tmp_path / "llm.sqlite")),
    )
    skips = Counter()
    items, prefs = GENERATORS["COT-Stitch"](
        [DOG, SIREN, CAT, COW], make_tables(), seed=0, options=options, settings=("instruction",), skips=skips
    )
    n_requests = len(_Handler.requests)
    assert n_requests == 4 and all(r["model"] == "tiny-judge" for r in _Handler.requests)
    item = next(i for i in items if i.meta["record"].endswith(":0"))  # Dog, then Siren
    pref = next(p for p in prefs if p.id == item.id)
    if mode == "good":
        assert item.meta["negatives"] == "llm"
        assert set(list(item.options.values())[:4]) == {
            item.options[item.answer],
            "Siren is followed by Dog.",
            "Dog and Siren play together.",
            "Dog is preceded by Siren.",
        }
        assert pref.rejected.endswith("Siren is followed by Dog.")  # the first negative: swapped order
    else:  # an unusable reply falls back to the template negatives, and says so
        assert item.meta["negatives"] == "template (llm reply unusable)"
        assert len(item.options) == 5
    # a second build is served from the reply cache: no new request
    GENERATORS["COT-Stitch"]([DOG, SIREN, CAT, COW], make_tables(), seed=0, options=options)
    assert len(_Handler.requests) == n_requests


def test_parse_negatives():
    assert parse_negatives('```json\n["b then a", "a with b"]\n```', "a then b", 2) == [
        "b then a",
        "a with b",
    ]
    assert parse_negatives('["a then b.", "b then a"]', "A then b", 1) == ["b then a"]
    assert parse_negatives('["only one"]', "x", 2) is None
    assert parse_negatives("not json", "x", 1) is None
    assert parse_negatives('{"a": 1}', "x", 1) is None
