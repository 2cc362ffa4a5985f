"""Rotation is a prep option, and the one prompt renderer: a training row's prompt equals the evaluator's prompt
of the same item under the same rotation, byte for byte."""

import re
from pathlib import Path

import pytest

from cavpref.data import CLEAN_TASK, TASKS, BenchmarkItem
from cavpref.data_prep.build import PrepConfig, build
from cavpref.data_prep.build.rotation import circular_sft_rows
from cavpref.data_prep.tasks.schema import load_outputs
from cavpref.eval.args import EvalArgs
from cavpref.eval.benchmarks.avtrustbench import AVTrustBench
from cavpref.prompts import render_prompt, rotate_response, rotated_view, rotation_for

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    from cavpref.data_prep.synthetic import WorldConfig, generate_world

    out = tmp_path_factory.mktemp("world") / "w"
    generate_world(
        WorldConfig(out=str(out), seed=3, num_clips=8, workers=1, width=64, height=64, fps=4, duration=2.0)
    )
    return out


def _build(world: Path, out: Path, rotate: bool):
    build(
        PrepConfig(
            output_dir=str(out),
            world=str(world),
            tasks=[*TASKS, CLEAN_TASK],
            seed=5,
            split_seed=5,
            rotate_options=rotate,
            formats=["arrow"],
            progress=False,
        )
    )
    return load_outputs(out)


@pytest.fixture(scope="module")
def builds(world, tmp_path_factory):
    root = tmp_path_factory.mktemp("rot")
    return _build(world, root / "drawn", False), _build(world, root / "rotated", True)


def _options(prompt):
    return dict(re.findall(r"^([A-H])\. (.*)$", prompt, flags=re.MULTILINE))


def test_rotated_rows_move_responses_with_their_options(builds):
    (_, drawn), (_, rotated) = builds
    before = {p.id: p for s in drawn.values() for p in s}
    after = [p for s in rotated.values() for p in s]
    assert len(after) == len(before) > 20

    def named(response, prompt):
        m = re.match(r"([A-H])\. (.*)$", response or "")
        return (m.group(2), _options(prompt)[m.group(1)]) if m else response

    moved = nota_not_last = 0
    for row in after:
        old = before[row.id]
        assert sorted(_options(row.prompt).values()) == sorted(_options(old.prompt).values())
        moved += row.prompt != old.prompt
        opts = _options(row.prompt)
        nota_not_last += (
            bool(opts)
            and "None of the above" in opts.values()
            and list(opts.values())[-1] != "None of the above"
        )
        pairs = [(row.chosen, old.chosen), (row.rejected, old.rejected)]
        for new_pair, old_pair in ((row.visual, old.visual), (row.audio, old.audio)):
            assert (new_pair is None) == (old_pair is None)
            if new_pair is not None:
                assert (new_pair.clean, new_pair.perturbed) == (old_pair.clean, old_pair.perturbed)
                pairs.append((new_pair.response, old_pair.response))
        for new, old_resp in pairs:
            new_named, old_named = named(new, row.prompt), named(old_resp, old.prompt)
            assert new_named == old_named, (row.id, new, old_resp)
            if isinstance(new_named, tuple):
                assert new_named[0] == new_named[1]  # the letter shows the text the response repeats
        assert (row.media, row.clap_delta, row.source_ids) == (old.media, old.clap_delta, old.source_ids)
    assert moved > len(after) // 3
    assert nota_not_last > 0  # "None of the above" is no longer always the last letter


def test_training_prompt_equals_the_evaluation_pass_byte_for_byte(builds):
    """The rotated training row of an item and the evaluator's CircularEval pass k = rotation_for(seed, id)
    render the same bytes; the unrotated row equals pass 0."""
    (_, drawn), (items, rotated) = builds
    by_id = {it.id: it for s in items.values() for it in s}
    bench = AVTrustBench(EvalArgs(mode="likelihood"))
    checked = 0
    for row in (p for s in rotated.values() for p in s):
        item = by_id[row.id]
        k = rotation_for(5, row.id, item.options)
        assert bench.request(item, k).prompt.encode() == row.prompt.encode()
        checked += 1
    for row in (p for s in drawn.values() for p in s):
        assert bench.request(by_id[row.id], 0).prompt == row.prompt
    assert checked > 20


def test_rotate_response_moves_letters_and_keeps_sentences():
    new_of = {"A": "B", "B": "C", "C": "A"}
    assert rotate_response("A. Piano", new_of) == "B. Piano"
    assert rotate_response("C. None of the above", new_of) == "A. None of the above"
    sentence = "The audio is missing, so I cannot answer."
    assert rotate_response(sentence, new_of) == sentence
    assert rotate_response(None, new_of) is None


def _item():
    return BenchmarkItem(
        id="CLEAN:instruction:x",
        task=CLEAN_TASK,
        source="avqa",
        category="Existential",
        question="What sounds?",
        options={"A": "Cat", "B": "Dog", "C": "None of the above"},
        answer="B",
        setting="instruction",
        template_id=0,
        media='{"end":null,"op":"source","path":"a.mp4","start":0.0}',
        abstain_letter="C",
        instruction="If it is missing, answer {abstain_letter}.",
    )


def test_render_prompt_layout_and_rotated_view():
    assert render_prompt("Q?", {"A": "x", "B": "y"}, "Pick one.") == "Q?\nA. x\nB. y\nPick one."
    assert (
        render_prompt("Q? ", {"A": "x"}, "Say {abstain_letter}.", "B", "Letter only.")
        == "Q?\nA. x\nSay B.\nLetter only."
    )
    options, new_of, prompt = rotated_view(_item(), 1)
    assert options == {"A": "Dog", "B": "None of the above", "C": "Cat"} and new_of == {
        "B": "A",
        "C": "B",
        "A": "C",
    }
    assert prompt == "What sounds?\nA. Dog\nB. None of the above\nC. Cat\nIf it is missing, answer B."


def test_rotation_is_drawn_from_seed_and_id_only():
    opts = _item().options
    draws = {rotation_for(0, f"id{i}", opts) for i in range(40)}
    assert draws == {0, 1, 2}  # every rotation occurs
    assert rotation_for(0, "id7", opts) == rotation_for(0, "id7", dict(opts))
    assert [rotation_for(1, f"id{i}", opts) for i in range(40)] != [
        rotation_for(0, f"id{i}", opts) for i in range(40)
    ]


def test_circular_sft_rows_show_every_circular_view():
    rows = circular_sft_rows([_item()], ["id", "task", "prompt", "chosen", "rejected", "media", "extra"])
    assert [r["chosen"] for r in rows] == ["B. Dog", "A. Dog", "C. Dog"]
    assert (
        rows[1]["prompt"] == "What sounds?\nA. Dog\nB. None of the above\nC. Cat\nIf it is missing, answer B."
    )
    assert all(r["rejected"] != r["chosen"] and "None of the above" not in r["rejected"] for r in rows)
    assert rows[0]["extra"] is None and rows[2]["id"] == "CLEAN:instruction:x:rot2"
    assert len(circular_sft_rows([_item()], ["id"], rotate=False)) == 1


def test_manifest_carries_the_switch_table_of_the_specs(builds, world, tmp_path_factory):
    import json

    from cavpref.data_prep.tasks import switch_table

    out = tmp_path_factory.getbasetemp() / "rot0" / "rotated"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["switch_table"] == {"paper": switch_table("paper"), "released": switch_table("released")}
    assert manifest["config"]["rotate_options"] is True
