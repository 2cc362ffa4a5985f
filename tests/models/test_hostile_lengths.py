"""Hostile-input pass (issue 18, #11): an over-long question / prompt is refused (or skipped and counted) with
its row named before any token reaches the model; max_length defaults to the model's context size."""

import json

import pytest

from cavpref.data import BenchmarkItem
from cavpref.eval.backends import ModelIOBackend
from cavpref.eval.pipeline import EvalArgs, evaluate


def context(tiny) -> int:
    return json.loads((tiny / "config.json").read_text())["text_config"]["max_position_embeddings"]


def test_max_length_defaults_to_the_models_context(tiny):
    from cavpref.models import load_model_io

    assert context(tiny) > 0 and load_model_io(str(tiny)).max_length == context(tiny)
    assert load_model_io(str(tiny), model_max_length=512).max_length == 512


def test_an_over_long_question_is_skipped_with_its_item_named_before_the_model(tiny, tmp_path):
    from cavpref.models import load_model_io

    four = {"A": "cat", "B": "dog", "C": "cow", "D": "None of the above"}
    long_q = "Which animal " + "is it really " * 1200 + "?"  # ~3600 tokens > 2048
    items = [
        BenchmarkItem(
            "short", "MCIT", "avqa", "Existential", "Which?", four, "A", "instruction", 0, None, "A"
        ),
        BenchmarkItem("huge", "MCIT", "avqa", "Existential", long_q, four, "A", "instruction", 0, None, "A"),
    ]
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps(i.to_row()) + "\n" for i in items))
    adapter = load_model_io(str(tiny), model_max_length=2048)  # a small context, so the test stays cheap
    seen = []
    real = adapter.generate_ids

    def spy(model, batch, **kw):  # what reaches the model
        seen.append(int(batch["input_ids"].shape[1]))
        return real(model, batch, **kw)

    adapter.generate_ids = spy
    res = evaluate(
        EvalArgs(data=str(data), output=str(tmp_path / "run"), no_judge=True),
        {"vanilla": True},
        backend=ModelIOBackend(adapter, generation={"max_new_tokens": 2}),
        rank=0,
        world=1,
    )
    assert max(seen) <= 2048
    reasons = res["metrics"]["counts"]["skip_reasons"]
    assert sum(reasons.values()) == 1 and "ModelIOError" in "".join(reasons), reasons
    records = [json.loads(x) for x in (tmp_path / "run" / "records.rank0.jsonl").read_text().splitlines()]
    bad = [r for r in records if r["status"] == "skipped"]
    assert [r["item_id"] for r in bad] == ["huge"] and "exceed max_length=2048" in bad[0]["reason"]


def test_training_rows_over_max_length_are_refused_with_the_row_named(tiny):
    from cavpref.models import load_model_io
    from cavpref.models.base import ModelIOError, Row

    adapter = load_model_io(str(tiny))  # the default max_length: the model's context
    n = context(tiny)
    with pytest.raises(ModelIOError, match=rf"r-7.*exceed max_length={n}"):
        adapter.collate(
            [Row(prompt="say " * (n + 10), response="A", media=None, media_key=None, row_id="r-7")]
        )
