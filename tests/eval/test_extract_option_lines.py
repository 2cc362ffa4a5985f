"""A reply that repeats its prompt's option line names that option, whatever label style the benchmark's prompt
writes (issue 57, item 1). MVBench's release writes "(A) text" (``qa_template`` of Ask-Anything's
``video_chat2/mvbench.ipynb``: "Question: …\\nOptions:\\n(A) …\\n(B) …"); the extractor took only "A. text" for an
option line and removed the repeated "(A) Drawing on a tablet" from the reply as if it were the question."""

import json
import shutil
from pathlib import Path

import pytest

from cavpref.apps.cli import main as cavpref_main
from cavpref.data import BenchmarkItem
from cavpref.eval.benchmarks.aura import data as aura
from cavpref.eval.benchmarks.mmar import data as mmar
from cavpref.eval.benchmarks.mvbench import data as mvbench
from cavpref.eval.benchmarks.traceav import data as traceav
from cavpref.eval.extract import match_choice
from cavpref.prompts import render_prompt

CANDIDATES = ["Drawing on a tablet", "Reading a printed book", "Typing on a laptop", "Writing in a notebook"]


def release_prompt(question: str, candidates: list[str]) -> str:
    """The MVBench release's prompt as its notebook forms it (``qa_template``, then "Only give the best
    option.")."""
    lines = [f"Question: {question}", "Options:"]
    lines += [f"({chr(ord('A') + i)}) {c}" for i, c in enumerate(candidates)]
    return "\n".join(lines) + "\nOnly give the best option."


@pytest.mark.parametrize("official", [False, True])
@pytest.mark.parametrize("index", range(4))
def test_a_reply_repeating_the_mvbench_option_line_names_it(index, official):
    item = _item(dict(zip("ABCD", CANDIDATES)))
    letter = "ABCD"[index]
    for prompt in (mvbench.prompt(item, official), release_prompt(item.question, CANDIDATES)):
        for reply in (f"({letter}) {CANDIDATES[index]}", f"({letter}) {CANDIDATES[index].lower()}."):
            ext = match_choice(reply, item.options, task="action_sequence", prompt=prompt)
            assert (ext.choice, ext.rule) == (letter, "letter"), (prompt, reply)
    # the question repeated is still no answer, nor is the whole option list
    assert match_choice(item.question, item.options, task=item.task, prompt=prompt).choice is None
    listing = "\n".join(f"({x}) {t}" for x, t in item.options.items())
    assert match_choice(listing, item.options, task=item.task, prompt=prompt).choice is None


def test_mvbench_scores_predictions_that_repeat_the_option_line(tmp_path):
    """End to end: `eval score` on the fixture release, paper protocol (the default)."""
    root = tmp_path / "MVBench"
    shutil.copytree(Path(mvbench.__file__).parent / "fixtures" / "json", root / "json")
    preds = tmp_path / "preds.jsonl"
    rows = [
        {"id": "mvbench/action_sequence/0", "response": "(A) Ate the medicine."},
        {"id": "mvbench/action_sequence/1", "response": "(B) Sat on the sofa/couch."},
    ]
    preds.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "scored"
    argv = ["eval", "score", "--benchmark", "mvbench", "--predictions", str(preds), "--data", str(root)]
    assert cavpref_main([*argv, "--tasks", "action_sequence", "--output", str(out)]) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["metrics"]["overall"] == {"n": 2, "Avg": 100.0}
    assert results["counts"]["unparsed_reasons"] == {}


@pytest.mark.parametrize(
    "style", ["{x}. {t}", "({x}) {t}", "{x}) {t}", "[{x}] {t}", "{x}: {t}", "Answer: ({x}) {t}"]
)
def test_every_benchmark_reads_an_option_line_in_every_label_style(style):
    """The other benchmarks write "A. text" option lines (AVTrustBench's ``render_prompt``, AURA, MMAR,
    TraceAV); a reply repeating its option in any label style names it under each one's own rule."""
    options = dict(zip("ABCD", CANDIDATES))
    reply = style.format(x="C", t=options["C"])
    item = _item(options, answer="C")
    avtrust = match_choice(reply, options, task="MCIT", prompt=render_prompt(item.question, options))
    assert avtrust.choice == "C"
    mv = match_choice(reply, options, task="action_sequence", prompt=mvbench.prompt(item))
    assert mv.choice == "C"
    assert aura.letter_of(reply, item) == "C"
    assert mmar.is_correct(reply, item)[0] and mmar.is_correct(reply, item, "official")[0]
    assert traceav.parse_prediction(reply, list(options))[0] == ("C",)


def _item(options: dict[str, str], answer: str = "A") -> BenchmarkItem:
    """An item with these options (a registered task, as ``BenchmarkItem`` requires; each benchmark's
    rule is called with its own task name)."""
    return BenchmarkItem(
        id="t/0",
        task="MCIT",
        source="t",
        category="t",
        question="What is the person in the video doing with their hands?",
        options=options,
        answer=answer,
        setting="base",
        template_id=0,
        media=None,
        meta={},
    )
