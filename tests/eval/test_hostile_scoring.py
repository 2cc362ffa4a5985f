"""Hostile-input pass two, evaluation (issue 40 #6-#9, #26, "every item fails"): an echoed prompt or a
negated abstention is no abstention; a corrected answer key re-scores stored passes; compare refuses runs
over different items; pass fields are integers; eval inputs name file, row / line and field; a run with
nothing evaluated is an error. Real loopback HTTP "models", the real runner and CLI."""

import json

import pytest

from cavpref.data_prep.tasks import TASK_SPECS
from cavpref.eval.extract import ABSTAIN, is_correct, match_choice
from cavpref.prompts import render_prompt

OPTIONS = {"A": "acoustic_guitar", "B": "Piano", "C": "Three", "D": "Thirty-three", "E": "None of the above"}
BASE = {k: v for k, v in OPTIONS.items() if k != "E"}
ABSTAINING = sorted(t for t, spec in TASK_SPECS.items() if spec.abstains)


def _prompts(task, options, abstain_letter):
    """Every (question, instruction) template of ``task`` rendered as the evaluator shows it."""
    return [
        render_prompt(t.question.format(question="How many?"), options, t.instruction, abstain_letter)
        for t in TASK_SPECS[task].templates
    ]


@pytest.mark.parametrize("task", ABSTAINING)
def test_an_echoed_prompt_or_a_negated_abstention_is_no_abstention(task):
    """Case 6: any mention of "None of the above" used to be an abstention, so echoing the option list,
    repeating the instruction or saying "not None of the above" was correct on every abstaining task."""
    for prompt in _prompts(task, OPTIONS, "E"):
        lines = prompt.splitlines()
        echo_options = "\n".join(lines[1:6])
        echo_instruction = lines[6]
        for reply in (echo_options, echo_instruction, f"{echo_instruction}\n{echo_options}", prompt):
            got = match_choice(reply, OPTIONS, task=task, abstain_letter="E", prompt=prompt)
            assert got.choice != "E", (reply, got)
        got = match_choice(
            "The answer is not None of the above; it is Three.",
            OPTIONS,
            task=task,
            abstain_letter="E",
            prompt=prompt,
        )
        assert got.choice != "E", got
        # a real abstention after the echo still abstains, and so does the option's own line
        assert (
            match_choice(
                f"{echo_instruction} None of the above.",
                OPTIONS,
                task=task,
                abstain_letter="E",
                prompt=prompt,
            ).choice
            == "E"
        )
        assert (
            match_choice("E. None of the above", OPTIONS, task=task, abstain_letter="E", prompt=prompt).choice
            == "E"
        )
    # base setting (no "None of the above" option; the correct answer is to abstain)
    base = render_prompt("How many?", BASE)
    got = match_choice("The answer is not None of the above; it is Three.", BASE, task=task, prompt=base)
    assert got.choice == "C" and not is_correct(got.choice, None)
    assert match_choice("It isn't none of the options: B.", BASE, task=task, prompt=base).choice == "B"
    assert match_choice("None of the above.", BASE, task=task, prompt=base).choice == ABSTAIN


# ------------------------------------------------------------------ whole runs against a served model


@pytest.fixture(scope="module")
def served():
    """An OpenAI-compatible "model" on loopback that always answers "A" (real HTTP, nothing patched)."""
    from tests.helpers.judge_server import LoopbackServer, completion

    server = LoopbackServer(lambda body, n: (200, {}, completion("A"), 0))
    yield server
    server.close()


def _items(path, answer="A", n=3):
    from cavpref.data import BenchmarkItem

    rows = [
        BenchmarkItem(
            f"c{i}",
            "CAT",
            "avqa",
            "Count",
            f"How many? ({i})",
            {"A": "one", "B": "two"},
            answer,
            "base",
            0,
            None,
        ).to_row()
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _evaluate(served, data, out, **kw):
    from cavpref.chat_client import ChatClient, ChatConfig
    from cavpref.eval.backends import EndpointBackend
    from cavpref.eval.pipeline import EvalArgs, evaluate

    client = ChatClient(ChatConfig(base_url=served.url, model="served", max_retries=0, env_prefix="X"))
    args = EvalArgs(data=str(data), output=str(out), **kw)
    return evaluate(args, {"vanilla": True}, backend=EndpointBackend(client), rank=0, world=1)


def test_a_corrected_answer_key_rescores_stored_passes(served, tmp_path):
    """Case 7: a rerun into the same output after the answer key was corrected kept each stored pass's
    ``correct`` flag (100 % here; a fresh run gives 0 %). Stored answers are re-scored, never regenerated."""
    data, out = tmp_path / "items.jsonl", tmp_path / "run"
    first = _evaluate(served, _items(data, "A"), out)
    assert first["metrics"]["overall"]["vanilla"] == 100.0
    calls = len(served.requests)
    again = _evaluate(served, _items(data, "B"), out)
    fresh = _evaluate(served, data, tmp_path / "fresh")
    assert again["metrics"]["overall"]["vanilla"] == fresh["metrics"]["overall"]["vanilla"] == 0.0
    log = json.loads((out / "run_log.rank0.json").read_text())
    assert (log["passes_computed"], log["passes_rescored"]) == (0, 3)
    assert len(served.requests) == calls + 3  # the fresh run's three; the rerun asked the model nothing


def test_compare_refuses_runs_over_different_items(served, tmp_path, capsys):
    """Case 8: `eval compare` subtracted a full run from a `--limit 1` run without a word."""
    from cavpref.eval.cli import main

    data = _items(tmp_path / "items.jsonl")
    full = tmp_path / "full"
    _evaluate(served, data, full, label="full")
    _evaluate(served, data, tmp_path / "one", label="one", limit=1)
    _evaluate(served, data, tmp_path / "again", label="again")
    capsys.readouterr()
    assert main(["compare", str(full), str(tmp_path / "one")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "different item sets (full: 3 items; one: 1 items)" in err
    assert main(["compare", str(full), str(tmp_path / "one"), "--allow_different_items", "true"]) == 0
    assert "**Warning: the rows were evaluated on different item sets" in capsys.readouterr().out
    assert main(["compare", str(full), str(tmp_path / "again")]) == 0
    assert "item sets" not in capsys.readouterr().out


@pytest.mark.parametrize("value", [True, "1", 1.0, -1])
def test_a_pass_field_that_is_not_an_integer_is_refused(tmp_path, capsys, value):
    """Case 9: `"rotation": true` was read as rotation 1 (a bool is an int to Python): every prediction
    unused, exit 0. MMAR's `run` was `int()`-converted the same way."""
    from cavpref.eval.cli import main
    from cavpref.eval.pipeline import read_predictions
    from cavpref.eval.registry import get

    data = _items(tmp_path / "items.jsonl")
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"id": "c0", "rotation": 0, "choice": "A"}) + "\n")
    preds.write_text(preds.read_text() + json.dumps({"id": "c1", "rotation": value, "choice": "A"}) + "\n")
    assert main(["score", "--predictions", str(preds), "--data", str(data), "--vanilla", "true"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"{preds}: line 2" in err and "field 'rotation' must be a non-negative integer" in err
    preds.write_text(json.dumps({"id": "q1", "run": value, "response": "A"}) + "\n")
    with pytest.raises(ValueError, match=f"{preds}: line 1.*field 'run' must be a non-negative integer"):
        read_predictions(get("mmar")(), preds)


def test_an_evaluation_in_which_every_item_fails_is_an_error(tmp_path, capsys):
    """ "Every item fails": a run whose every item was skipped (the served model down) exited 0 with nothing
    on the console. Now one line naming the run folder, the counts and the reason; the report is written."""
    from cavpref.eval.cli import main
    from tests.helpers.judge_server import LoopbackServer

    server = LoopbackServer(lambda body, n: (500, {}, {"error": "overloaded"}, 0))
    data, out = _items(tmp_path / "items.jsonl"), tmp_path / "run"
    try:
        argv = ["--model", server.url, "--endpoint_model", "m", "--endpoint_max_retries", "0"]
        code = main(["avtrustbench", *argv, "--data", str(data), "--output", str(out), "--vanilla", "true"])
    finally:
        server.close()
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert code == 2
    assert f"{out}: none of the 3 items was evaluated (3 skipped, 0 incomplete: 3× endpoint" in err
    assert (out / "report.md").is_file() and (out / "results.json").is_file()


def _row(**change):
    from cavpref.data import BenchmarkItem

    item = BenchmarkItem(
        "r1", "CAT", "avqa", "Count", "How many?", {"A": "one", "B": "two"}, "A", "base", 0, None
    )
    return {**item.to_row(), **change}


@pytest.mark.parametrize(
    "change, words",
    [
        ({"answer": float("nan")}, "field 'answer' must be an option letter or null, got nan"),
        ({"question": "  "}, "field 'question' is empty"),
        ({"option_texts": ["one", ""]}, "field 'option_texts': option B is empty"),
        ({"option_texts": ["one", "One."]}, "field 'option_texts': options A and B are the same"),
    ],
)
def test_eval_rows_that_prep_would_refuse_are_refused_naming_row_and_field(tmp_path, capsys, change, words):
    """Case 26: an eval row with a NaN answer gave "argument of type 'float' is not iterable"; empty and
    duplicate options and empty questions were accepted (prep refuses them)."""
    from cavpref.eval.cli import main

    data = tmp_path / "items.jsonl"
    data.write_text(json.dumps(_row(id="ok")) + "\n" + json.dumps(_row(id="bad", **change)) + "\n")
    assert main(["avtrustbench", "--data", str(data), "--output", str(tmp_path / "o"), "--model", "x"]) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"{data}: row 1 (id 'bad')" in err and words in err, err


def test_predictions_files_name_file_and_line(tmp_path, capsys):
    """Case 26: a non-UTF-8 predictions file named neither file nor line; lower-case letters made every pass
    unparsed without naming a line (now read as the letters they are; a choice that is no letter at all is
    refused naming the line)."""
    from cavpref.eval.cli import main

    data = _items(tmp_path / "items.jsonl", "B")
    preds = tmp_path / "preds.jsonl"
    rows = [{"id": f"c{i}", "rotation": k, "choice": "ab"[k]} for i in range(3) for k in range(2)]
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    score = ["score", "--predictions", str(preds), "--data", str(data)]
    assert main(score) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["vanilla"] == 0.0  # "a": A, wrong
    rows[0]["choice"] = "b"
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main([*score, "--vanilla", "true"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["vanilla"] == pytest.approx(100 / 3, abs=0.01)  # c0 right: "b" is B
    rows[4]["choice"] = "A) one"
    preds.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(score) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"{preds}: line 5" in err and "field 'choice' must be an option letter, ABSTAIN or null" in err
    preds.write_bytes(b'{"id": "c0", "choice": "A"}\n{"id": "c1", "response": "caf\xe9"}\n')
    assert main(score) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert f"{preds}: line 2: not UTF-8 (byte 0xe9 at column 30)" in err, err
