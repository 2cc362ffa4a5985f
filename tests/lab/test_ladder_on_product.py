"""The ladder runs on the product's implementation of its lessons (issue 56): its mixes' CLEAN rows come from
prep's own rule (``cavpref.data_prep.build.clean_rows``, chosen per mix), its separation from the evaluation's
(``cavpref.eval.benchmarks.avtrustbench.separation``). Each check compares with what the ladder's own copies
gave before they were deleted: fingerprints computed at bca38a4 (main) with ``cavpref_lab.ladder.rows.
clean_abstain_rows`` and ``cavpref_lab.ladder.margins.margins`` / ``separation`` on the same small world and the
same records, hard-coded here."""

from __future__ import annotations

import hashlib
import json
import random
import shutil
from pathlib import Path

import pytest
from datasets import load_from_disk

from cavpref.apps.quickstart import Stage
from cavpref.data import CLEAN_TASK, TASKS
from cavpref.data_prep.build import PrepConfig, build
from cavpref.eval.benchmarks.avtrustbench.reader import load_items
from cavpref.prompts import n_passes, rotate
from cavpref_lab.ladder import diagnose as diag
from cavpref_lab.ladder import margins, rows

# at bca38a4, on conftest's small_world (seed 3) prepped with every task, seed 0, rotated rows: the train rows'
# (id, rejected) with prep's wrong-option CLEAN rows, and with the lab's clean_abstain_rows applied to them
WRONG_OPTION_ROWS = "8411e3d30a242a77607af5be45c7b5307983a8dd3d65a9632504c495100be609"
LAB_CLEAN_ABSTAIN_ROWS = "ff955bbfb34701b1f08b68bbe627dfb178c073f317028f6b71b90a0e37695531"
N_ROWS, N_CHANGED = 640, 98
# the synthetic records below, and the lab's margins / separation of them at bca38a4, per protocol
RECORDS = "3102b4cd3743e0dd5188b22da2b266835ff897fbf7c9601948347c7b14190ec4"
LAB = {
    "sum": (
        "ad723056e594ce3fa446ee7ec4ffba4dd12317792b56fda33e401b6d4b3181e6",
        "1b72158f99315992b0b55e4f6b2c808294bb1d44258ecbc1f5bde7e4987b261a",
        (249, 57.63052208835341, 22.08835341365462, 16.06425702811245),
    ),
    "per_token": (
        "c115c14aa5b1c1b50ebc0415d74f1a276293235b9b97d64eb641c73d839d8fe5",
        "0a69dfe0059275c4003dd0a7cdcc7071a0a793b916add22af59a95aa84f9f2af",
        (249, 53.41365461847389, 22.08835341365462, 20.080321285140563),
    ),
    "letter": (
        "c469bde1c28e03043be4981620a378bd4078781312b5387912645d3b2abf9576",
        "f599c9c8b736fad0eaedeb96468d631e624bfd40f13427f120a29b0ad61cd8e0",
        (249, 41.76706827309237, 17.670682730923694, 25.702811244979916),
    ),
}


def _fp(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()


def _rows(prefs_dir: Path) -> str:
    train = load_from_disk(str(prefs_dir))["train"]
    assert len(train) == N_ROWS
    return _fp([[i, r] for i, r in zip(train["id"], train["rejected"])])


@pytest.fixture(scope="module")
def preps(small_world, tmp_path_factory):
    """A quickstart-like source per kind of CLEAN row: ``<kind>/data`` is prep's output (manifest included)."""
    root = tmp_path_factory.mktemp("ladder_sources")
    for kind in ("wrong_option", "abstain"):
        build(
            PrepConfig(
                output_dir=str(root / kind / "data"),
                world=str(small_world),
                tasks=[*TASKS, CLEAN_TASK],
                seed=0,
                split_seed=0,
                rotate_options=True,
                clean_rejected=kind,
            )
        )
    return root


def test_prep_builds_the_rows_of_both_mixes_as_the_ladder_did(preps):
    assert _rows(preps / "wrong_option" / "data" / "preferences") == WRONG_OPTION_ROWS  # the `clean` mix
    assert _rows(preps / "abstain" / "data" / "preferences") == LAB_CLEAN_ABSTAIN_ROWS  # `clean_abstain`


@pytest.mark.parametrize(
    "source, mix, expected",
    [("wrong_option", "clean_abstain", LAB_CLEAN_ABSTAIN_ROWS), ("abstain", "clean", WRONG_OPTION_ROWS)],
)
def test_each_mix_keeps_its_kind_of_clean_row_whatever_the_source_built(
    preps, tmp_path, source, mix, expected
):
    """The mix the source's prep did not build comes from the product's rule (rows.mix_data): the same rows the
    lab's copy gave (``clean_abstain``), the same rows prep built before its default changed (``clean``)."""
    src = tmp_path / "src"
    shutil.copytree(preps / source, src)
    assert rows.source_clean_rejected(src) == source
    stage = Stage(tmp_path / "lad", f"mixes/{mix}/data")
    rows.mix_data(stage, src, mix)
    assert _rows(stage.dir) == expected
    info = json.loads(stage.marker.read_text())
    assert info["clean_rows_changed"] == N_CHANGED and info["clean_rejected"] == rows.MIX_CLEAN_REJECTED[mix]
    assert not list(stage.dir.parent.glob(".*_prep"))  # the re-prep's folder is not left behind


def test_a_prep_from_before_the_key_built_wrong_option_rows(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").write_text('{"config": {"seed": 0}}')
    assert rows.source_clean_rejected(tmp_path) == "wrong_option"
    with pytest.raises(FileNotFoundError, match="manifest.json"):
        rows.source_clean_rejected(tmp_path / "nothing")


def _records(items: dict) -> list[dict]:
    """Likelihood records of every instruction item with a "None of the above" option: random option scores
    (ties included), CircularEval stopping some items early, a few failed passes."""
    rng, out = random.Random(7), []
    for it in sorted(items.values(), key=lambda i: i.id):
        if it.abstain_letter is None:
            continue
        for k in range(n_passes(it.options)):
            if k and rng.random() < 0.3:
                break
            shown, new_of = rotate(it.options, k)
            m = len(shown)
            scores = {
                "sum": [round(rng.uniform(-9, 0), 3) for _ in range(m)],
                "tokens": [rng.randint(1, 5) for _ in range(m)],
                "letter": [round(rng.uniform(-5, 0), 3) for _ in range(m)],
            }
            if rng.random() < 0.1:
                scores["sum"][0], scores["tokens"][0] = scores["sum"][-1], scores["tokens"][-1]
            status = "error" if rng.random() < 0.05 else "ok"
            answer = new_of.get(it.answer) if it.answer else None
            out.append(
                {"key": f"{it.id}:{k}", "item_id": it.id, "pass": k, "rotation": k, "status": status}
                | {"scores": scores, "answer": answer}
            )
    return out


@pytest.mark.parametrize("protocol", list(LAB))
def test_the_ladder_reads_separation_through_the_product(preps, tmp_path, protocol):
    data = preps / "wrong_option" / "data"
    items = {
        i.id: i
        for split in ("train", "test")
        for i in load_items(str(data), split=split).items
        if i.setting == "instruction"
    }
    recs = _records(items)
    assert _fp(recs) == RECORDS
    (tmp_path / "records.rank0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    want_margins, want_separation, (pairs, sep, abstain_p, abstain_c) = LAB[protocol]
    assert _fp(sorted(margins.run_margins(tmp_path, items, protocol).items())) == want_margins
    got = margins.run_separation(tmp_path, items, protocol)
    assert _fp(got) == want_separation
    assert (got["all"]["pairs"], got["all"]["separation"]) == (pairs, sep)
    assert (got["all"]["abstain perturbed"], got["all"]["abstain clean"]) == (abstain_p, abstain_c)
    # the diagnosis's pairs are the same pairs
    d = diag.diagnose(tmp_path, items, set(), protocol)
    assert (d["pairs"], d["separation"], d["abstains perturbed"]) == (pairs, sep, abstain_p)
