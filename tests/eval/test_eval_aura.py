"""AURA: the released QA format, answer/reasoning parsing, AuraScore against a judge on loopback and a tiny
NLI cross-encoder built from a config (its probabilities are meaningless; the code path is the real one)."""

import json

import numpy as np
import pytest
import torch

from cavpref.chat_client import ChatClient, ChatConfig
from cavpref.data import BenchmarkItem
from cavpref.eval.benchmarks.aura import data as aura
from cavpref.eval.benchmarks.aura.judge import AuraJudges, is_scored, parse_fcs, parse_sanitized, score
from cavpref.eval.benchmarks.aura.nli import NLIConfig, NLIScorer, entailment_index
from cavpref.eval.common import BenchmarkInputError, split_response
from cavpref.media.spec import clip
from tests.helpers.html_report_check import check_run_page
from tests.helpers.judge_server import LoopbackServer, completion

RECORDS = [  # as the released generators write them (note the space in "implicit distractions")
    {
        "question": "What is behind the guitarist in the top half?",
        "options": {"A": "A red couch", "B": "A brick wall", "C": "A window", "D": "A bookshelf"},
        "correct_answer_key": "A",
        "gold_reasoning": "The guitarist in the top half sits next to a woman on a red couch.",
        "video_id": "v1",
        "category": "implicit distractions",
    },
    {
        "question": "Why is the panel secured?",
        "options": {
            "A": "Decoration",
            "B": "To make the top taut so water runs off",
            "C": "Repair",
            "D": "Demo",
        },
        "correct_answer_key": "B",
        "gold_reasoning": "The speaker says it keeps the top taut so water runs off.",
        "video_id": "v2",
        "category": "causal_reasoning",
    },
    {
        "question": "What does the speaker say about racing history?",
        "options": {
            "A": "Its origins",
            "B": "Its rules",
            "C": "Nothing: the video never mentions it",
            "D": "Its future",
        },
        "correct_answer_key": "C",
        "gold_reasoning": "The speaker never discusses history.",
        "video_id": "v3",
        "category": "unanswerability",
    },
    {
        "question": "Is the audio in sync?",
        "options": {"A": "Yes", "B": "Ahead", "C": "Behind", "D": "No, shifted"},
        "correct_answer_key": "D",
        "gold_reasoning": "The drum hits precede the strikes.",
        "video_id": "v4",
        "category": "tempo_av_sync_analysis",
        "sync_status": "Misaligned",
    },
    {
        "question": "Which performer is the expert?",
        "options": {"A": "The first", "B": "The second"},
        "correct_answer_key": "B",
        "gold_reasoning": "The second plays fluently.",
        "video_id": "v5",
        "category": "performer_skill_profiling",
    },
]
RESPONSES = [
    "Answer: A\nReasoning: The guitarist in the top half is next to a red couch.",
    "Answer: to keep the top taut so that water runs off\nReasoning: The man explains the reason while clamping.",
    "Answer: A\nReasoning: He talks about the origins of racing.",
    "Answer: D",
    "Answer: the one who plays slowly\nReasoning: The first performer looks calm.",
]


@pytest.fixture(scope="module")
def nli_dir(tmp_path_factory):
    """A tiny BERT NLI head whose labels are NOT in the released model's order (entailment at index 2)."""
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    d = tmp_path_factory.mktemp("nli")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(
        {
            "the",
            "a",
            "subject",
            "object",
            "is",
            "has",
            "of",
            "an",
            "specific",
            "attribute",
            "cause",
            "performs",
            "action",
            "claim",
            "no",
            "sanitized",
        }
    )
    (d / "vocab.txt").write_text("\n".join(words) + "\n")
    tok = BertTokenizerFast(vocab_file=str(d / "vocab.txt"), do_lower_case=True)
    labels = {0: "contradiction", 1: "neutral", 2: "entailment"}
    cfg = BertConfig(
        vocab_size=len(words),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        num_labels=3,
        id2label=labels,
        label2id={v: k for k, v in labels.items()},
    )
    torch.manual_seed(0)
    model = BertForSequenceClassification(cfg)
    model.save_pretrained(d / "model")
    tok.save_pretrained(d / "model")
    return d / "model"


@pytest.fixture(scope="module")
def nli(nli_dir):
    return NLIScorer(NLIConfig(model=str(nli_dir), device="cpu", max_length=128))


def manual_entailment(model_dir, premise, hypothesis):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    with torch.no_grad():
        logits = model(
            **tok(premise, hypothesis, return_tensors="pt", truncation=True, max_length=128)
        ).logits
    return torch.softmax(logits, -1)[0].numpy()


@pytest.fixture
def aura_file(tmp_path):
    path = tmp_path / "aura.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return path


def test_reader_maps_the_released_records(aura_file):
    items = aura.read(aura_file, video_pattern="videos/{video_id}.mp4")
    assert [i.task for i in items] == ["ID", "CR", "UANS", "TSA", "PSP"]
    first = items[0]
    assert first.answer == "A" and first.benchmark == "aura" and first.category == "Distractions"
    assert json.loads(first.media) == {"op": "source", "path": "videos/v1.mp4", "start": 0.0, "end": None}
    assert (
        first.meta["gold_reasoning"].startswith("The guitarist")
        and items[3].meta["sync_status"] == "Misaligned"
    )
    assert first.id == aura.read(aura_file, video_pattern="videos/{video_id}.mp4")[0].id  # stable ids
    assert "A. A red couch" in aura.prompt(first) and "Reasoning:" in aura.prompt(first)


@pytest.mark.parametrize(
    "change,field",
    [
        ({"correct_answer_key": "E"}, "correct_answer_key"),
        ({"category": "karaoke"}, "category"),
        ({"options": "[1]"}, "options"),
    ],
)
def test_reader_names_the_bad_field(tmp_path, change, field):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(RECORDS[0]) + "\n" + json.dumps({**RECORDS[1], **change}) + "\n")
    with pytest.raises(BenchmarkInputError, match=rf"bad.jsonl: line 2, field '{field}'"):
        aura.read(path)


def test_split_response_and_letters():
    assert split_response("Answer: B\nReasoning: because x") == ("B", "because x")
    assert split_response("Reasoning: because y\nAnswer: C") == ("C", "because y")
    assert split_response('{"answer": "A", "reasoning": "z"}') == ("A", "z")
    assert split_response("<think>step 1</think>The answer is D.") == ("The answer is D.", "step 1")
    item = BenchmarkItem(
        id="x",
        task="CR",
        source="aura",
        category="c",
        question="q",
        options={"A": "x", "B": "y"},
        answer="B",
        setting="base",
        template_id=0,
        media=clip("v.mp4"),
        meta={"benchmark": "aura"},
    )
    assert aura.letter_of("B", item) == "B" and aura.letter_of("(A)", item) == "A"
    assert aura.letter_of("the second one", item) is None and aura.letter_of("A or B", item) is None


def test_fcs_and_sanitize_replies_are_parsed_robustly():
    assert parse_fcs('```json\n{"factual_consistency_score": 0.75, "explanation": "x",}\n```') == 0.75
    assert parse_fcs("Factual_consistency_score: 50%") == 0.5
    assert parse_fcs('{"factual_consistency_score": "3/4"}') == 0.75
    assert parse_fcs("0.2") == 0.2 and parse_fcs("**Factual consistency score**: 3/4\nExplanation: x") == 0.75
    for bad in ('{"factual_consistency_score": 1.5}', "no idea", '{"factual_consistency_score": true}'):
        with pytest.raises(ValueError):
            parse_fcs(bad)
    assert (
        parse_sanitized('Sure: {"sanitized_reasoning": "The subject has an attribute."}')
        == "The subject has an attribute."
    )
    with pytest.raises(ValueError):
        parse_sanitized('{"other": 1}')


def test_entailment_index_is_read_from_the_labels(nli, nli_dir):
    assert nli.index == 2 and entailment_index({0: "ENTAILMENT", 1: "neutral", 2: "contradiction"}) == 0
    with pytest.raises(ValueError, match="entailment"):
        entailment_index({0: "LABEL_0", 1: "LABEL_1"})
    p = nli.probabilities(["the subject has an attribute"], ["the object is a cause"])[0]
    expect = manual_entailment(nli_dir, "the subject has an attribute", "the object is a cause")
    np.testing.assert_allclose(p, expect, atol=1e-5)
    assert abs(p.sum() - 1) < 1e-5 and nli.entailment(["a"], ["b"]).shape == (1,)


def judge_reply(body, n):
    system, user = body["messages"][0]["content"], body["messages"][1]["content"]
    if system.startswith("You check whether"):  # answer equivalence
        return 200, {}, completion('{"is_correct": %s}' % ("true" if "taut" in user else "false")), 0
    if system.startswith("You are a meticulous fact checker"):
        text = (
            '```json\n{"factual_consistency_score": 0.75}\n```'
            if "red couch" in user
            else "factual_consistency_score: 50%"
        )
        return 200, {}, completion(text), 0
    claim = "the subject has an attribute" if "couch" in user else "the object is a cause"
    if "explains the reason" in user:
        claim = "the subject performs an action"
    return 200, {}, completion(json.dumps({"sanitized_reasoning": claim})), 0


def test_aurascore_end_to_end_with_cache(aura_file, nli, nli_dir, tmp_path):
    server = LoopbackServer(judge_reply)
    items = aura.read(aura_file)
    answers, reasonings = zip(*(split_response(r) for r in RESPONSES))
    cfg = ChatConfig(
        base_url=server.url, model="judge", cache_path=str(tmp_path / "c.sqlite"), backoff_s=0.01
    )
    try:
        with ChatClient(cfg) as client:
            recs = score(items, answers, reasonings, AuraJudges(client, nli))
        assert (
            len(server.requests) == 2 + 2 + 4
        )  # 2 equivalence, 2 FCS, 2x2 sanitisations; none for wrong answers
        with ChatClient(cfg) as client:
            again = score(items, answers, reasonings, AuraJudges(client, nli))
            assert client.stats["http_calls"] == 0
    finally:
        server.close()
    assert all(is_scored(r) for r in recs) and again == recs
    by_task = {r["task"]: r for r in recs}
    assert by_task["ID"]["correct_by"] == "letter" and by_task["CR"]["correct_by"] == "judge"
    assert [by_task[t]["correct"] for t in ("ID", "CR", "UANS", "TSA", "PSP")] == [
        True,
        True,
        False,
        True,
        False,
    ]
    assert (
        by_task["UANS"]["fcs"] == by_task["UANS"]["cis"] == 0.0
        and by_task["TSA"]["note"] == "empty reasoning"
    )
    p1 = manual_entailment(nli_dir, "the subject has an attribute", "the subject has an attribute")[2]
    p2 = manual_entailment(nli_dir, "the object is a cause", "the subject performs an action")[2]
    assert by_task["ID"]["fcs"] == 0.75 and by_task["CR"]["fcs"] == 0.5
    assert by_task["ID"]["cis"] == pytest.approx(p1, abs=1e-5) and by_task["CR"]["cis"] == pytest.approx(
        p2, abs=1e-5
    )
    m = aura.aura_metrics([aura.AuraRecord(r["task"], r["correct"], r["fcs"], r["cis"]) for r in recs])
    assert m["per_task"]["ID"] == {
        "n": 1,
        "ACC": 100.0,
        "FCS": 75.0,
        "CIS": pytest.approx(100 * p1, abs=1e-3),
    }
    assert m["per_task"]["UANS"] == {"n": 1, "ACC": 0.0, "FCS": 0.0, "CIS": 0.0}
    assert m["overall"]["ACC"] == pytest.approx(60.0) and m["overall"]["FCS"] == pytest.approx(25.0)
    assert m["overall"]["CIS"] == pytest.approx(100 * (p1 + p2) / 5, abs=1e-3)
    table = aura.table2_markdown(m, "tiny")
    assert table.splitlines()[0].startswith("| Method | Distractions ACC | FCS | CIS | Causal Reasoning ACC")
    assert "| tiny | 100.00 | 75.00 |" in table


def test_judge_failure_leaves_the_item_unscored(aura_file, nli):
    def reply(body, n):
        if body["messages"][0]["content"].startswith("You are a meticulous"):
            return 500, {}, {"error": "down"}, 0
        return judge_reply(body, n)

    server = LoopbackServer(reply)
    items = aura.read(aura_file)[:1]
    try:
        with ChatClient(ChatConfig(base_url=server.url, model="j", max_retries=1, backoff_s=0.01)) as client:
            (rec,) = score(items, ["A"], ["The guitarist sits by a red couch."], AuraJudges(client, nli))
    finally:
        server.close()
    assert (
        rec["correct"] is True and not is_scored(rec) and "fcs" in rec["error"] and "HTTP 500" in rec["error"]
    )


def test_metric_edge_cases():
    assert aura.aura_metrics([])["overall"] == {"n": 0, "ACC": None, "FCS": None, "CIS": None}
    wrong = [aura.AuraRecord("CR", False, 0.9, 0.9)]  # scores of a wrong answer never count
    assert aura.aura_metrics(wrong)["overall"] == {"n": 1, "ACC": 0.0, "FCS": 0.0, "CIS": 0.0}
    recs = [
        aura.AuraRecord("CR", True, 1.0, 0.5),
        aura.AuraRecord("ID", True, 0.5, 0.5),
        aura.AuraRecord("ID", False, 0, 0),
        aura.AuraRecord("ID", True, 0.0, 0.2),
    ]
    m = aura.aura_metrics(recs)
    assert m["per_task"]["ID"]["ACC"] == pytest.approx(200 / 3) and m["per_task"]["ID"][
        "CIS"
    ] == pytest.approx(70 / 3)
    assert m["overall"]["FCS"] == pytest.approx(37.5) and m["task_mean"]["FCS"] == pytest.approx(
        (100 + 50 / 3) / 2
    )


def test_cli_run_rescores_a_failed_judge_and_scores_released_predictions(tmp_path, nli_dir):
    from cavpref.apps.cli import main as cavpref_main
    from cavpref.media.write import write_mp4

    data = tmp_path / "aura"
    data.mkdir()
    for k in range(1, 6):
        write_mp4(
            data / f"v{k}.mp4",
            np.full((4, 32, 32, 3), 40 * k, np.uint8),
            4.0,
            np.zeros(8000, np.float32),
            16000,
        )
    (data / "aura.jsonl").write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    by_question = {r["question"]: resp for r, resp in zip(RECORDS, RESPONSES)}
    judge_down = {"fcs": True}

    def reply(body, n):
        if body["model"] == "omni":  # the evaluated model, served like a vLLM endpoint
            text = next(p["text"] for p in body["messages"][0]["content"] if p["type"] == "text")
            return 200, {}, completion(by_question[text.split("\nOptions:")[0]]), 0
        if (
            judge_down["fcs"]
            and body["messages"][0]["content"].startswith("You are a meticulous")
            and "red couch" in body["messages"][1]["content"]
        ):
            return 503, {}, {"error": "overloaded"}, 0
        return judge_reply(body, n)

    server = LoopbackServer(reply)
    run = tmp_path / "run"
    argv = [
        "eval",
        "aura",
        "--model",
        server.url,
        "--endpoint_model",
        "omni",
        "--data",
        str(data / "aura.jsonl"),
        "--output",
        str(run),
        "--judge_model",
        "judge",
        "--judge_base_url",
        server.url,
        "--nli_model",
        str(nli_dir),
        "--judge_max_retries",
        "0",
    ]
    try:
        assert cavpref_main(argv) == 0
        first = json.loads((run / "results.json").read_text())
        model_calls = sum(r["body"]["model"] == "omni" for r in server.requests)
        judge_down["fcs"] = False
        assert cavpref_main(argv) == 0  # resume: the failed judge step is redone from the stored answer
        assert sum(r["body"]["model"] == "omni" for r in server.requests) == model_calls == 5
    finally:
        server.close()
    assert first["counts"]["skipped"] == 1 and "judge pending" in next(iter(first["counts"]["skip_reasons"]))
    results = json.loads((run / "results.json").read_text())
    assert results["counts"]["evaluated"] == 5 and results["metrics"]["per_task"]["ID"]["FCS"] == 75.0
    assert results["metrics"]["overall"]["ACC"] == pytest.approx(60.0) and results["judge"]["prompt_version"]
    assert results["evaluation"]["nli"]["entailment_index"] == 2
    assert (
        "layout of AURA Table 2" in (run / "report.md").read_text()
        and (run / "plots" / "aura_tasks.png").is_file()
    )
    rows = check_run_page(run)  # report.html: every item with the judge's steps its record holds
    assert {"fcs", "cis", "reasoning"} <= {
        f[0] for r in rows.values() for p in r["passes"] for f in p["fields"]
    }
    # the released evaluator's input: AURA records + <model_key>_answer / <model_key>_reason, letters only here
    preds = tmp_path / "gemini_responses.jsonl"
    preds.write_text(
        "".join(
            json.dumps({**r, "gem_answer": r["correct_answer_key"] if i % 2 == 0 else "A", "gem_reason": ""})
            + "\n"
            for i, r in enumerate(RECORDS)
        )
    )
    out = tmp_path / "scored"
    assert (
        cavpref_main(
            [
                "eval",
                "score",
                "--benchmark",
                "aura",
                "--predictions",
                str(preds),
                "--data",
                str(data / "aura.jsonl"),
                "--model_key",
                "gem",
                "--output",
                str(out),
                "--no_judge",
            ]
        )
        == 0
    )
    scored = json.loads((out / "results.json").read_text())
    assert scored["metrics"]["overall"] == {
        "n": 5,
        "ACC": 60.0,
        "FCS": None,
        "CIS": None,
    }  # items 0, 2, 4 right
