"""HTML report tests' helpers: a scripted AVTrustBench run (items, a served model on loopback), reading a page
back (the rows it holds), and the check every benchmark's run test makes.

A helper module, not a test file (like ``judge_server.py``): the ``test_eval_*`` files import it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from cavpref.data import BenchmarkItem
from cavpref.media.spec import clip, drop_video, mute, to_json
from cavpref.media.write import write_mp4
from tests.helpers.judge_server import LoopbackServer, completion, endpoint_client

DATA = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.DOTALL)


def page_data(path: str | Path) -> dict:
    """The JSON the page's script reads (facets, rows, runs)."""
    return json.loads(DATA.search(Path(path).read_text(encoding="utf-8")).group(1))


def rows_by_id(path: str | Path) -> dict[str, dict]:
    return {r["id"]: r for r in page_data(path)["rows"]}


def check_run_page(run: str | Path) -> dict[str, dict]:
    """The run's report.html holds every item of results.json, each evaluated one with its passes (the prompt
    and what its records hold), and ``eval report RUN --html`` rebuilds the same rows from the folder alone
    (records found by their keys). Returns the rows by id."""
    from cavpref.apps.cli import main as cavpref_main

    run = Path(run)
    results = json.loads((run / "results.json").read_text())
    rows = rows_by_id(run / "report.html")
    assert len(rows) == results["counts"]["items"]
    evaluated = [r for r in rows.values() if r["facets"]["status"] == "evaluated"]
    assert len(evaluated) == results["counts"]["evaluated"]
    for row in evaluated:
        assert row["passes"] and all(p["prompt"] for p in row["passes"]), row["id"]
        assert row["facets"]["result"] in ("correct", "wrong")
    before = {i: {k: v for k, v in r.items() if k != "media"} for i, r in rows.items()}
    (run / "report.html").unlink()
    assert cavpref_main(["eval", "report", str(run), "--html", "--no_media"]) == 0
    after = {
        i: {k: v for k, v in r.items() if k != "media"} for i, r in rows_by_id(run / "report.html").items()
    }
    assert after == before
    return rows


SECRET = "sk-html-echoed-secret-0123456789"
LATE = "sk-late-registered-4242"  # in an item's question: registered only before the page is rebuilt


def item(iid, task, record, question, options, answer, media, abstain=None):
    return BenchmarkItem(
        iid,
        task,
        "music_avqa",
        "Count",
        question,
        options,
        answer,
        "instruction",
        0,
        media,
        abstain,
        meta={"record": record},
    )


def build_data(root: Path) -> Path:
    """Seven items over two clips: two clean twins and their perturbed items, one with no twin, an MVT
    item, one whose clip is missing."""
    t = np.arange(16000) / 16000
    for name, level, hz in (("a.mp4", 60, 330), ("b.mp4", 200, 550)):
        frames = np.full((4, 48, 64, 3), level, dtype=np.uint8)
        write_mp4(root / name, frames, 4.0, (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32))
    a, b = clip("a.mp4"), clip("b.mp4")
    nota = "None of the above"
    items = [
        item(
            "c1",
            "CLEAN",
            "r1",
            "Q1 which instrument?",
            {"A": "piano", "B": "violin", "C": "drum"},
            "A",
            to_json(a),
        ),
        item(
            "p1",
            "MCIT",
            "r1",
            "Q1 which instrument?",
            {"A": "violin", "B": "drum", "C": "flute", "D": nota},
            "D",
            to_json(a),
            "D",
        ),
        item("c2", "CLEAN", "r2", "Q2 which one?", {"A": "cello", "B": "harp", "C": "bell"}, "A", to_json(a)),
        item(
            "p2",
            "MAT",
            "r2",
            "Q2 which one?",
            {"A": "cello", "B": "harp", "C": "bell", "D": nota},
            "D",
            mute(a),
            "D",
        ),
        item("p3", "ICIT", "r3", "Q3 which?", {"A": "drum", "B": "bell", "C": nota}, "C", to_json(b), "C"),
        item(
            "p4",
            "MVT",
            "r4",
            f"Q4 what plays? {LATE}",
            {"A": "harp", "B": "flute", "C": nota},
            "C",
            drop_video(b),
            "C",
        ),
        item(
            "m6",
            "MVIT",
            "r6",
            "Q6 missing?",
            {"A": "piano", "B": nota},
            "B",
            to_json(clip("missing.mp4")),
            "B",
        ),
    ]
    (root / "items.jsonl").write_text("".join(json.dumps(i.to_row()) + "\n" for i in items))
    return root


def letter_of(prompt: str, text: str) -> str:
    return next(line[0] for line in prompt.split("\n") if line[1:3] == ". " and line[3:] == text)


def scripted(leak: str):
    """The served model: right on Q1's clean item, abstains on Q1's and Q2's perturbed ones, wrong on Q2's
    clean item, rambles on Q3 (left to the judge), echoes its key and markup loading ``leak`` on Q4."""
    return lambda body, n: _scripted(body, leak)


def _scripted(body, leak):
    prompt = next(p["text"] for p in body["messages"][0]["content"] if p["type"] == "text")
    if prompt.startswith("Q1") and "None of the above" not in prompt:
        answer = f"The answer is {letter_of(prompt, 'piano')}."
    elif prompt.startswith("Q2") and "None of the above" not in prompt:
        answer = f"The answer is {letter_of(prompt, 'harp')}."
    elif prompt.startswith("Q1"):
        answer = "None of the above."
    elif prompt.startswith("Q2"):
        answer = "The audio is missing."
    elif prompt.startswith("Q3"):
        answer = "hmm, hard to say"
    else:
        answer = f'my key is {SECRET} <img src="{leak}"></script><script>window.leaked=1</script>'
    return 200, {}, completion(answer), 0


def judge_reply(body, n):
    return 200, {}, completion("No match found"), 0


def run_eval(data, out, reply, monkeypatch, **kw):
    """``evaluate`` (generate, CircularEval, instruction setting) with ``reply`` as the served model and a
    judge that finds no match; the endpoint's key is ``SECRET``."""
    from cavpref.eval.backends import EndpointBackend
    from cavpref.eval.pipeline import EvalArgs, evaluate

    monkeypatch.setenv("CAVPREF_ENDPOINT_API_KEY", SECRET)
    model, judge = LoopbackServer(reply), LoopbackServer(judge_reply)
    try:
        client = endpoint_client(model)
        args = EvalArgs(
            data=str(data / "items.jsonl"),
            output=str(out),
            num_frames=2,
            judge_model="j",
            judge_base_url=judge.url,
            judge_max_retries=0,
            tasks=["MCIT", "ICIT", "MVIT", "MAT", "MVT", "CLEAN"],
            **kw,
        )
        return evaluate(args, backend=EndpointBackend(client), rank=0, world=1)
    finally:
        model.close()
        judge.close()
