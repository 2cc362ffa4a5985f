"""MMAR-Rubrics: the released meta format, MMAR's string-match rule, rubric judging on loopback, and the two
variance protocols with hand-computed numbers."""

import json
import re

import pytest

from cavpref.chat_client import ChatClient, ChatConfig
from cavpref.eval.benchmarks.mmar import data as mmar
from cavpref.eval.benchmarks.mmar.data import (
    MMARRecord,
    is_correct,
    parse_rubric_reply,
    string_match,
    summary,
)
from cavpref.eval.benchmarks.mmar.judge import MMARJudge, ratings_of, score
from cavpref.eval.common import BenchmarkInputError, trim_min_max
from tests.helpers.html_report_check import check_run_page
from tests.helpers.judge_server import LoopbackServer, completion


def rubric(n=5):
    return [
        {
            "name": f"Criterion {i}",
            "scoring_point": f"Award 1 point if step {i} is stated.",
            "note": "",
            "choices": [0, 1],
        }
        for i in range(1, n + 1)
    ]


RECORDS = [
    {
        "id": "q1",
        "audio_path": "./audio/q1.wav",
        "question": "Where might this music come from?",
        "choices": ["Mountain Canyon", "Dense Forest", "Open Grassland", "City Streets"],
        "answer": "Open Grassland",
        "modality": "music",
        "category": "Cultural Layer",
        "sub-category": "Professional Knowledge and Reasoning",
        "language": None,
        "thinking": "Throat singing carries over open land.",
        "cue": ["Throat Singing"],
        "rubric": rubric(),
    },
    {
        "id": "q2",
        "audio_path": "./audio/q2.wav",
        "question": "Does the man think there is too much food?",
        "choices": [
            "Too little",
            "Just right, no opinion",
            "Too much, need to give some to others",
            "Too much, can't finish",
        ],
        "answer": "Too little",
        "modality": "speech",
        "category": "Semantic Layer",
        "sub-category": "Content Analysis",
        "language": "en",
        "thinking": "He asks for more.",
        "cue": [],
        "rubric": rubric(),
    },
    {
        "id": "q3",
        "audio_path": "audio/q3.wav",
        "question": "How many dogs bark?",
        "choices": json.dumps(["One", "Two"]),
        "answer": "Two",
        "modality": "sound",
        "category": "Perception Layer",
        "sub-category": "Counting and Statistics",
        "thinking": "Two distinct barks.",
        "cue": [],
        "rubric": json.dumps(rubric()),
    },  # nested fields as JSON strings
]


@pytest.fixture
def items(tmp_path):
    path = tmp_path / "MMAR-meta.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return mmar.read(path)


def test_reader_is_audio_only_and_decodes_json_strings(items):
    q1, _, q3 = items
    assert (
        q1.answer == "C"
        and q1.options["C"] == "Open Grassland"
        and q1.task == "music"
        and q1.benchmark == "mmar"
    )
    assert json.loads(q1.media) == {
        "op": "combine",
        "video": None,
        "audio": {"op": "source", "path": "audio/q1.wav", "start": 0.0, "end": None},
    }
    assert q1.meta["sub_category"] == "Professional Knowledge and Reasoning" and len(q1.meta["rubric"]) == 5
    assert (
        q3.options == {"A": "One", "B": "Two"}
        and q3.answer == "B"
        and q3.meta["rubric"][0]["choices"] == [0, 1]
    )
    assert "C. Open Grassland" in mmar.prompt(q1)


@pytest.mark.parametrize(
    "change,field",
    [
        ({"answer": "Lake"}, "answer"),
        ({"audio_path": "../x.wav"}, "audio_path"),
        ({"rubric": [{"name": "x"}]}, "rubric[0]"),
        ({"choices": "[oops"}, "choices"),
    ],
)
def test_reader_names_the_bad_field(tmp_path, change, field):
    path = tmp_path / "m.jsonl"
    path.write_text(json.dumps({**RECORDS[0], **change}) + "\n")
    with pytest.raises(BenchmarkInputError, match=re.escape(f"m.jsonl: line 1, field {field!r}")):
        mmar.read(path)


def test_string_match_rule():
    choices = RECORDS[0]["choices"]
    assert string_match("Open Grassland", "The music suggests an open grassland.", choices)
    assert not string_match(
        "Open Grassland", "open grassland or dense forest", choices
    )  # a distractor-only token
    assert not string_match("Open Grassland", "grassland", choices)  # an answer token missing
    assert not string_match("Open Grassland", "", choices)
    food = RECORDS[1]["choices"]
    assert string_match("Too little", "He thinks there is too little food", food)
    assert not string_match("Too little", "too much", food)


def test_correctness_by_letter_or_text(items):
    q1 = items[0]
    assert is_correct("C", q1) == (True, "option letter") and is_correct("(B)", q1) == (
        False,
        "option letter",
    )
    assert is_correct("Open Grassland", q1) == (True, "string match") and is_correct(None, q1)[0] is False


def test_rubric_reply_is_validated():
    r = rubric(3)
    good = '```json\n[{"name": "Criterion 1", "score": 1}, {"name": "Criterion 2", "score": "0"}, {"score": 1},]\n```'
    assert parse_rubric_reply(good, r) == [1.0, 0.0, 1.0]
    assert mmar.rubric_fraction([1.0, 0.0, 1.0], r) == pytest.approx(2 / 3)
    assert mmar.rubric_fraction([2, 1], [{"choices": [0, 1, 2]}, {"choices": [0, 2]}]) == pytest.approx(3 / 4)
    with pytest.raises(ValueError, match="scored 2 criteria"):
        parse_rubric_reply('[{"score": 1}, {"score": 1}]', r)
    with pytest.raises(ValueError, match="not among"):
        parse_rubric_reply('[{"score": 1}, {"score": 0.5}, {"score": 1}]', r)


def recs_for_protocols():
    return [
        MMARRecord("i1", True, (1.0, 0.8, 0.6, 0.8, 0.4), "music", "Cultural Layer", "a"),
        MMARRecord("i2", True, (0.2, 0.2, 0.4, 1.0, 0.6), "speech", "Semantic Layer", "b"),
        MMARRecord("i3", False, (), "music", "Cultural Layer", "a"),
        MMARRecord("i4", False, (), "sound", "Signal Layer", "c"),
    ]


def test_two_variance_protocols_by_hand():
    recs = recs_for_protocols()
    # raters: r1 = mean(0.8, 0.6, 0.8), r2 = mean(0.2, 0.4, 0.6); Rubrics = (r1 + r2) / 4, CRS = (r1 + r2) / 2
    r1, r2 = 2.2 / 3, 0.4
    assert summary(recs, "raters") == pytest.approx(
        {"n": 4, "n_correct": 2, "Avg": 50.0, "Rubrics": 100 * (r1 + r2) / 4, "CRS": 100 * (r1 + r2) / 2}
    )
    # runs: run sums 1.2, 1.0, 1.0, 1.8, 1.0 -> Rubrics_k = sum/4, CRS_k = sum/2; middle three of each
    assert summary(recs, "runs") == pytest.approx(
        {
            "n": 4,
            "n_correct": 2,
            "Avg": 50.0,
            "Rubrics": 100 * (0.25 + 0.25 + 0.30) / 3,
            "CRS": 100 * (0.5 + 0.5 + 0.6) / 3,
        }
    )
    m = mmar.mmar_metrics(recs)
    assert m["raters"]["modality"]["music"] == pytest.approx(
        {"n": 2, "n_correct": 1, "Avg": 50.0, "Rubrics": 100 * r1 / 2, "CRS": 100 * r1}
    )
    assert m["runs"]["category"]["Signal Layer"]["CRS"] == 0.0 and set(m["raters"]["sub_category"]) == {
        "a",
        "b",
        "c",
    }
    assert trim_min_max([3.0]) == 3.0 and trim_min_max([1.0, 3.0]) == 2.0


def test_no_correct_answer_gives_defined_zero_scores():
    recs = [MMARRecord("i", False), MMARRecord("j", False)]
    for protocol in ("raters", "runs"):
        assert summary(recs, protocol) == {"n": 2, "n_correct": 0, "Avg": 0.0, "Rubrics": 0.0, "CRS": 0.0}
    with pytest.raises(ValueError, match="not rated"):
        summary([MMARRecord("k", True)])


def test_rubric_judge_with_distinct_seeds_retries_and_cache(items, tmp_path):
    def reply(body, n):
        seed, user = body["seed"], body["messages"][1]["content"]
        if ("too little" in user and seed in (44, 1044)) or ("Grassland" in user and seed % 1000 == 46):
            return 200, {}, completion("I cannot score this."), 0  # unusable replies
        satisfied = {42: 5, 43: 4, 44: 3, 45: 4, 46: 2}[seed % 1000]
        return (
            200,
            {},
            completion(
                json.dumps([{"name": f"Criterion {i}", "score": int(i <= satisfied)} for i in range(1, 6)])
            ),
            0,
        )

    server = LoopbackServer(reply)
    cfg = ChatConfig(
        base_url=server.url, model="gpt-judge", cache_path=str(tmp_path / "c.sqlite"), backoff_s=0.01
    )
    answers = ["Open Grassland", "too little", "One"]
    reasonings = ["Throat singing...", "He asks for more.", "One bark."]
    try:
        with ChatClient(cfg) as client:
            recs = score(items, answers, reasonings, MMARJudge(client))
        seeds = sorted(r["body"]["seed"] for r in server.requests)
        assert seeds == [42, 42, 43, 43, 44, 44, 45, 45, 46, 46, 1044, 1046, 2044, 2046]
        with ChatClient(cfg) as client:  # rerun: every reply (valid or not) comes from the cache
            again = score(items, answers, reasonings, MMARJudge(client))
            assert client.stats["http_calls"] == 0
    finally:
        server.close()
    q1, q2, q3 = recs
    assert q2["correct"] and ratings_of(q2) == (1.0, 0.8, 0.6, 0.8, 0.4) and q2["ratings"][2]["attempts"] == 3
    assert q2["ratings"][0]["scores"] == [1.0] * 5 and q2["error"] is None
    assert (
        ratings_of(q1) is None
        and q1["ratings"][4]["attempts"] == 3
        and q1["error"].startswith("rater 4: malformed")
    )
    assert q3["correct"] is False and q3["ratings"] == [] and again == recs


def test_cli_audio_only_run_and_released_predictions(tmp_path, capsys):
    import numpy as np
    import soundfile as sf

    from cavpref.apps.cli import main as cavpref_main

    root = tmp_path / "MMAR"
    (root / "audio").mkdir(parents=True)
    for r in RECORDS:
        sf.write(
            root / "audio" / f"{r['id']}.wav", np.sin(np.arange(8000) / 5).astype(np.float32) * 0.3, 16000
        )
    (root / "MMAR-meta.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    answers = {
        "Where might": "Reasoning: throat singing.\nAnswer: Open Grassland",
        "Does the man": "Reasoning: he wants more.\nAnswer: Too much, can't finish",
        "How many": "B",
    }

    def reply(body, n):
        if body["model"] == "omni":
            parts = body["messages"][0]["content"]
            assert sorted(p["type"] for p in parts) == ["input_audio", "text"]  # no video is sent
            text = next(p["text"] for p in parts if p["type"] == "text")
            return 200, {}, completion(next(v for k, v in answers.items() if text.startswith(k))), 0
        satisfied = {42: 5, 43: 4, 44: 3}[body["seed"]]
        return (
            200,
            {},
            completion(json.dumps([{"name": "c", "score": int(i < satisfied)} for i in range(5)])),
            0,
        )

    server = LoopbackServer(reply)
    run = tmp_path / "run"
    argv = [
        "eval",
        "mmar",
        "--model",
        server.url,
        "--endpoint_model",
        "omni",
        "--data",
        str(root / "MMAR-meta.jsonl"),
        "--output",
        str(run),
        "--judge_model",
        "judge",
        "--judge_base_url",
        server.url,
        "--raters",
        "3",
    ]
    try:
        assert cavpref_main(argv) == 0
    finally:
        server.close()
    m = json.loads((run / "results.json").read_text())["metrics"]
    # q1 right with ratings (1.0, 0.8, 0.6): trimmed 0.8; q2 wrong; q3 right ("B" is the answer's letter), 0.8
    assert m["raters"]["overall"] == pytest.approx(
        {"n": 3, "n_correct": 2, "Avg": 200 / 3, "Rubrics": 160 / 3, "CRS": 80.0}
    )
    assert m["runs"]["overall"]["CRS"] == pytest.approx(80.0)
    assert set(m["raters"]["modality"]) == {"music", "speech", "sound"}
    assert "3 runs, mean of the middle three" in (run / "report.md").read_text()
    rows = check_run_page(run)  # report.html: every item with its raters' scores
    assert "ratings" in {f[0] for r in rows.values() for p in r["passes"] for f in p["fields"]}
    preds = tmp_path / "preds.jsonl"
    preds.write_text(
        "".join(
            json.dumps({**r, "answer_prediction": a, "thinking_prediction": "..."}) + "\n"
            for r, a in zip(RECORDS, ["Dense Forest", "Too little", "Two"])
        )
    )
    assert (
        cavpref_main(
            [
                "eval",
                "score",
                "--benchmark",
                "mmar",
                "--predictions",
                str(preds),
                "--data",
                str(root / "MMAR-meta.jsonl"),
                "--output",
                str(tmp_path / "scored"),
                "--no_judge",
            ]
        )
        == 0
    )
    scored = json.loads((tmp_path / "scored" / "results.json").read_text())["metrics"]
    assert list(scored) == ["accuracy"] and scored["accuracy"]["overall"]["Avg"] == pytest.approx(200 / 3)
    assert scored["accuracy"]["overall"]["Rubrics"] is None
    # MMAR's first evaluator read `model_prediction`: the same predictions under that key score the same
    old = tmp_path / "old_preds.json"
    old.write_text(
        json.dumps(
            [{**r, "model_prediction": a} for r, a in zip(RECORDS, ["Dense Forest", "Too little", "Two"])]
        )
    )
    assert (
        cavpref_main(
            [
                "eval",
                "score",
                "--benchmark",
                "mmar",
                "--predictions",
                str(old),
                "--data",
                str(root / "MMAR-meta.jsonl"),
                "--output",
                str(tmp_path / "old"),
                "--no_judge",
            ]
        )
        == 0
    )
    again = json.loads((tmp_path / "old" / "results.json").read_text())["metrics"]
    assert again["accuracy"]["overall"] == scored["accuracy"]["overall"]
    (tmp_path / "empty.jsonl").write_text("")
    assert (
        cavpref_main(
            [
                "eval",
                "score",
                "--benchmark",
                "mmar",
                "--predictions",
                str(old),
                "--data",
                str(tmp_path / "empty.jsonl"),
                "--no_judge",
            ]
        )
        == 2
    )
    assert "no mmar items selected (the file holds none)" in capsys.readouterr().err


# ----------------------------------------------------------------------------- what a rater is (issue 45)


def _twenty_items(tmp_path):
    rows = [
        {**RECORDS[0], "id": f"r{i}", "question": f"Where might music {i} come from?", "rubric": rubric()}
        for i in range(20)
    ]
    path = tmp_path / "MMAR-meta.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return mmar.read(path)


@pytest.mark.parametrize("protocol", ["official", "paper"])
def test_a_rater_is_one_independent_request_every_run(tmp_path, protocol):
    """Under --protocol official the five raters send identical requests (seed 42). Each is its own call with
    its own cache entry, so the judge receives exactly K requests per rated item on every fresh run, whatever
    the thread timing (it used to receive 5, 4, 3 or 2: a rater starting after an identical reply was cached
    got that reply), and none on a rerun."""
    items = _twenty_items(tmp_path)

    def reply(body, n):  # a slow judge, so the five identical requests overlap in flight
        return 200, {}, completion(json.dumps([{"score": 1}] * 5)), 0.02

    server = LoopbackServer(reply)
    answers, reasonings = ["Open Grassland"] * 20, ["Throat singing carries."] * 20
    counts = []
    try:
        for run in range(3):  # three fresh runs, each with its own cache
            before = len(server.requests)
            cfg = ChatConfig(base_url=server.url, model="j", cache_path=str(tmp_path / f"c{run}.sqlite"))
            with ChatClient(cfg) as client:
                recs = score(items, answers, reasonings, MMARJudge(client, protocol=protocol))
            counts.append(len(server.requests) - before)
            assert all(ratings_of(r) == (1.0,) * 5 for r in recs)
        with ChatClient(cfg) as client:  # a rerun on the last cache: every rating from the cache
            before = len(server.requests)
            again = score(items, answers, reasonings, MMARJudge(client, protocol=protocol))
            assert len(server.requests) == before and client.stats["cache_hits"] == 100
    finally:
        server.close()
    assert counts == [100, 100, 100]  # 20 rated items x 5 raters, every time
    assert [r["ratings"] for r in again] == [r["ratings"] for r in recs]
    seeds = {r["body"]["seed"] for r in server.requests}
    assert seeds == ({42} if protocol == "official" else {42, 43, 44, 45, 46})


def test_identical_requests_in_flight_share_one_call(tmp_path):
    """Without a tag, identical requests sent at once (two items with the same prompt) are one call: the
    later ones wait for it, so the count does not depend on which finished first."""
    server = LoopbackServer(lambda body, n: (200, {}, completion("ok"), 0.05))
    try:
        with ChatClient(
            ChatConfig(base_url=server.url, model="j", cache_path=str(tmp_path / "c.sqlite"))
        ) as c:
            got = c.chat_many([[{"role": "user", "content": "same"}]] * 8)
            assert len(server.requests) == 1 and [r.text for r in got] == ["ok"] * 8
            tagged = [c.chat([{"role": "user", "content": "same"}], cache_tag=f"rater {k}") for k in range(3)]
            assert len(server.requests) == 4 and all(r.ok for r in tagged)
    finally:
        server.close()


# ----------------------------------------------------------------------------- five inference runs (issue 45)


def test_inference_runs_metric_by_hand():
    """Three items, five runs. Run j: which items are right and their r values; Avg / Rubrics / CRS per run,
    then the mean of the middle three of each."""
    right = [[1, 1, 0], [1, 0, 0], [1, 1, 1], [0, 0, 0], [1, 1, 0]]  # run x item
    r = [[0.8, 0.6, 0.0], [0.4, 0.0, 0.0], [1.0, 0.8, 0.6], [0.0, 0.0, 0.0], [0.6, 0.6, 0.0]]
    per_item = [
        [
            MMARRecord(f"i{i}", bool(right[j][i]), (r[j][i],) * 3 if right[j][i] else (), "music")
            for j in range(5)
        ]
        for i in range(3)
    ]
    got = mmar.inference_runs(per_item)
    # Avg per run: 66.7, 33.3, 100, 0, 66.7 -> middle three 33.3, 66.7, 66.7 -> 55.56
    assert got["Avg"] == pytest.approx((100 / 3 + 200 / 3 + 200 / 3) / 3)
    # Rubrics per run: 1.4/3, 0.4/3, 2.4/3, 0, 1.2/3 -> middle three 0.4/3, 1.2/3, 1.4/3 -> 100 * 1.0 / 3
    assert got["Rubrics"] == pytest.approx(100 * (0.4 + 1.2 + 1.4) / 9)
    # CRS per run: 0.7, 0.4, 0.8, 0 (no correct answer), 0.6 -> middle three 0.4, 0.6, 0.7
    assert got["CRS"] == pytest.approx(100 * (0.4 + 0.6 + 0.7) / 3)
    assert got["runs"] == 5 and [x["n_correct"] for x in got["per_run"]] == [2, 1, 3, 0, 2]


def test_five_inference_runs_sample_resume_and_name_their_protocol(tmp_path):
    """`--runs 5`: the served model is asked five times per item with seeds run_seed + k (sampling), every
    run's record is kept, a rerun reuses all of them, and the report says which protocol produced the
    numbers."""
    import numpy as np
    import soundfile as sf

    from cavpref.apps.cli import main as cavpref_main

    root = tmp_path / "MMAR"
    (root / "audio").mkdir(parents=True)
    for r in RECORDS[:2]:
        sf.write(root / "audio" / f"{r['id']}.wav", np.zeros(8000, np.float32), 16000)
    (root / "MMAR-meta.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS[:2]))
    right = {"Where might": "Open Grassland", "Does the man": "Too little"}

    def reply(body, n):
        if body["model"] == "omni":
            text = next(p["text"] for p in body["messages"][0]["content"] if p["type"] == "text")
            q = next(k for k in right if text.startswith(k))
            assert body["temperature"] == 0.7
            wrong = (body["seed"] - 10) % 5 < (2 if q == "Where might" else 4)  # q1 right in 3 runs, q2 in 1
            return 200, {}, completion(f"Reasoning: r\nAnswer: {'Dense Forest' if wrong else right[q]}"), 0
        return 200, {}, completion(json.dumps([{"score": int(i < 4)} for i in range(5)])), 0

    server = LoopbackServer(reply)
    run = tmp_path / "run"
    argv = [
        "eval", "mmar", "--model", server.url, "--endpoint_model", "omni", "--data", str(root / "MMAR-meta.jsonl"),
        "--output", str(run), "--judge_model", "j", "--judge_base_url", server.url, "--runs", "5",
        "--run_seed", "10", "--run_temperature", "0.7",
    ]  # fmt: skip
    try:
        assert cavpref_main(argv) == 0
        model_calls = [r for r in server.requests if r["body"]["model"] == "omni"]
        assert sorted(r["body"]["seed"] for r in model_calls) == [10, 10, 11, 11, 12, 12, 13, 13, 14, 14]
        assert cavpref_main(argv) == 0  # resumed: nothing asked again
        assert len([r for r in server.requests if r["body"]["model"] == "omni"]) == 10
    finally:
        server.close()
    results = json.loads((run / "results.json").read_text())
    block = results["metrics"]["inference_runs"]["overall"]
    # runs 0-4: q1 right in runs 2, 3, 4; q2 right in run 4 -> Avg per run 0, 0, 50, 50, 100 -> middle 33.3
    assert [x["Avg"] for x in block["per_run"]] == [0.0, 0.0, 50.0, 50.0, 100.0]
    assert block["Avg"] == pytest.approx(100 / 3)
    assert block["CRS"] == pytest.approx(80.0 * 2 / 3)  # run CRS 0, 0, 80, 80, 80 -> middle three
    assert results["evaluation"]["inference_runs"] == {
        "runs": 5,
        "seeds": [10, 11, 12, 13, 14],
        "temperature": 0.7,
    }
    records = [json.loads(x) for x in (run / "records.rank0.jsonl").read_text().splitlines()]
    assert sorted((r["item_id"], r["run"]) for r in records) == [
        (i, k) for i in ("q1", "q2") for k in range(5)
    ]
    report = (run / "report.md").read_text()
    assert "5 inference runs, mean of the middle three — the model answered 5 times" in report
    assert "sampling seeds [10, 11, 12, 13, 14]" in report
