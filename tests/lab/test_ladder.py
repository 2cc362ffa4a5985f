"""``cavpref_lab.ladder`` (issue 38): the ceiling's rows, the budgets, the pruning and the reading of
results.json, with hand-computed numbers; the whole ladder on a ``--preset small`` quickstart is the slow test."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from cavpref_lab.ladder import diagnose as diag
from cavpref_lab.ladder import margins, report
from cavpref_lab.ladder import plan as ladder
from cavpref_lab.ladder import rows as ladder_rows


def test_ceiling_rows_pair_each_perturbed_row_with_its_clean_twin():
    ids = [
        "CLEAN:base:r1",  # 0
        "MVIT:base:r1",  # 1 -> twin 0
        "CAT:base:e1",  # 2 no twin (event record)
        "MAIT:base:r1",  # 3 -> twin 0 again
        "MVIT:instruction:r1",  # 4 -> no CLEAN:instruction:r1 here
        "CLEAN:instruction:r2",  # 5 never a twin: not in the ceiling
    ]
    tasks = [i.split(":")[0] for i in ids]
    assert ladder_rows.ceiling_order(ids, tasks) == ([1, 0, 2, 3, 0, 4], 2)
    assert ladder_rows.ceiling_order(ids, tasks, clean_copies=3) == ([1, 0, 0, 0, 2, 3, 0, 0, 0, 4], 2)


def test_every_run_reaches_the_largest_budget_and_two_epochs():
    cfg = ladder.LadderConfig(source="s", out="o")
    assert cfg.budgets == [120, 480, 960, 1920]
    assert ladder.run_steps(cfg, 7742, 8) == 2040  # 2 epochs = 1935.5 steps -> the next multiple of 120
    assert ladder.run_steps(cfg, 9196, 8) == 2400  # 2299 -> 2400
    assert ladder.run_steps(cfg, 100, 8) == 1920  # a small set: the largest budget
    assert ladder.points(cfg, 2040) == [120, 480, 960, 1920, 2040]
    with pytest.raises(ValueError, match="not multiples of --save_every"):
        ladder.LadderConfig(source="s", out="o", budgets=[100])
    with pytest.raises(ValueError, match="unknown"):
        ladder.LadderConfig(source="s", out="o", methods=["ppo"])


def test_decisive_runs_keep_every_decisive_budget(tmp_path):
    """Each decisive seed is one run to the largest budget, evaluated at every budget (a budget added later
    extends the runs: its earlier checkpoints stay); seed 0 is the curve, which keeps the budgets it reaches."""
    from datasets import Dataset, DatasetDict

    ids = ["CLEAN:base:r1", "MVIT:base:r1", "MAIT:base:r1"]
    DatasetDict(
        {"train": Dataset.from_dict({"id": ids, "task": [i.split(":")[0] for i in ids]})}
    ).save_to_disk(str(tmp_path / "src" / "data" / "preferences"))
    # a prep from before `clean_rejected`: its CLEAN rows reject a wrong option, the `clean` mix's own kind
    (tmp_path / "src" / "data" / "manifest.json").write_text('{"config": {}}')
    cfg = ladder.LadderConfig(
        source=str(tmp_path / "src"),
        out=str(tmp_path / "lad"),
        parts=["decisive"],
        decisive_steps=[480, 240],
        decisive_seeds=[0, 1],
        decisive_methods=["dpo"],
        decisive_mixes=["clean"],
        mixes=["clean"],
        precompute_ref=False,
    )
    jobs = [j.name for j in ladder.plan(cfg, ladder.QuickstartConfig(out=cfg.out))]
    assert jobs == [
        "decisive/1/clean/dpo",
        "decisive/1/clean/dpo/eval/00240",
        "decisive/1/clean/dpo/eval/00480",
    ]
    assert ladder.points(cfg, 2040) == [120, 240, 480, 960, 1920, 2040]
    assert ladder.points(replace(cfg, decisive_steps=[2400]), 2040) == [120, 480, 960, 1920, 2040]
    assert ladder.LadderConfig(source="s", out="o", decisive_steps=480).decisive_steps == [
        480
    ]  # an older folder


def test_allow_recipe_change_reaches_the_training_runs_only(tmp_path, monkeypatch):
    """A ladder extended past a code change: the switch goes into the training run's recipe (cavpref train's
    resume guard reads it), and only when asked."""
    from datasets import Dataset, DatasetDict

    ids = ["CLEAN:base:r1", "MVIT:base:r1"]
    DatasetDict(
        {"train": Dataset.from_dict({"id": ids, "task": [i.split(":")[0] for i in ids]})}
    ).save_to_disk(str(tmp_path / "src" / "data" / "preferences"))
    # a prep from before `clean_rejected`: its CLEAN rows reject a wrong option, the `clean` mix's own kind
    (tmp_path / "src" / "data" / "manifest.json").write_text('{"config": {}}')
    written = {}
    monkeypatch.setattr(ladder, "train_stage", lambda qcfg, st, rec: written.setdefault(st.name, rec))
    for allow in (False, True):
        cfg = ladder.LadderConfig(
            source=str(tmp_path / "src"),
            out=str(tmp_path / f"lad{allow}"),
            parts=["curves"],
            methods=["dpo"],
            mixes=["clean"],
            budgets=[120],
            epochs=0,
            precompute_ref=False,
            allow_recipe_change=allow,
        )
        for job in ladder.plan(cfg, ladder.QuickstartConfig(out=cfg.out)):
            if job.name == "curves/clean/dpo":
                job.run(ladder.Stage(Path(cfg.out), job.name))
        assert written.pop("curves/clean/dpo")["allow_recipe_change"] is allow
        assert not written


def test_prune_keeps_the_points_and_the_last_optimizer(tmp_path):
    for step in (120, 240, 360, 480):
        ck = tmp_path / f"checkpoint-{step}"
        ck.mkdir()
        for f in ("model.safetensors", "optimizer.pt", "scheduler.pt"):
            (ck / f).write_text("x")
    ladder.prune(tmp_path, [120, 480])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-120", "checkpoint-480"]
    assert sorted(p.name for p in (tmp_path / "checkpoint-120").iterdir()) == ["model.safetensors"]
    assert len(list((tmp_path / "checkpoint-480").iterdir())) == 3  # the last one can still be resumed


def _results(vanilla: dict[str, float], n: int = 100) -> dict:
    tasks = {t: {"n": n, "vanilla": v, "circular": v / 2} for t, v in vanilla.items()}
    trust = {"paired": {"n": 10, "circular": 30.0}, "false_abstention": 5.0, "tasks": {}}
    view = {"settings": {"instruction": {"tasks": tasks}}, "trust": {"settings": {"instruction": trust}}}
    return {"by_option_score": {"per_token": view}}


def test_every_remedy_in_the_decisive_table_is_compared_with_dpo_by_seed():
    """The named ingredient differences first, then each other decisive method minus DPO (the rule of issue 53),
    none twice and DPO never against itself."""
    methods = ["ceiling", "dpo", "cavpref", "cavpref_ancpo", "dpo_va"]
    assert report.diff_pairs(methods) == [*report.DIFFS, ("cavpref_ancpo", "dpo"), ("dpo_va", "dpo")]
    assert report.diff_pairs(["dpo"]) == list(report.DIFFS)


def test_cells_and_the_side_of_chance():
    res = _results({"MVIT": 40.0, "MAIT": 10.0, "MVT": 25.0, "MAT": 45.0, "CLEAN": 80.0})
    got = report.cells(res, "per_token")
    assert got["MVIT"] == 20.0 and got["CLEAN"] == 40.0  # circular
    assert got["modality"] == pytest.approx((20 + 5 + 12.5 + 22.5) / 4)
    assert got["rest"] is None and got["paired trust"] == 30.0 and got["false abstention"] == 5.0
    # 40 of 100 at chance 1/4: P(X >= 40) = 0.0007 (above); 10 of 100: below; 25 of 100: chance
    sides = report.against_chance(res, "per_token", {"MVIT": 0.25, "MAIT": 0.25, "MVT": 0.25, "ICIT": 0.2})
    assert {t: s["side"] for t, s in sides.items()} == {"MVIT": "above", "MAIT": "below", "MVT": "chance"}


def test_pooled_auroc_and_the_option_mix():
    # perturbed margins 2, 0 against clean 1, 0: (2>1) + (2>0) + (0<1) + (0=0: half) = 2.5 of 4 pairs
    assert diag.pooled_auroc([2.0, 0.0], [1.0, 0.0]) == 62.5
    assert diag.pooled_auroc([3.0], [1.0, 2.0]) == 100.0
    music = {"cello", "accordion"}
    assert diag.option_mix(["Cello", "Accordion"], music) == "one kind"
    assert diag.option_mix(["Bird", "Car", "On the left"], music) == "one kind"  # no instrument at all
    assert diag.option_mix(["Car", "Right", "Cello", "Accordion"], music) == "mixed"


def test_the_fitted_cut_and_the_first_pass_at_a_cut():
    # cuts -0.5, 0.75, 1.25, 1.75, 3: balanced accuracy (perturbed > cut) + (clean <= cut) = 1, 1.5, 1, 1.5, 1;
    # the tie goes to the smaller cut
    assert diag.fitted_cut([2.0, 1.0], [0.5, 1.5]) == 0.75
    assert diag.fitted_cut([3.0], [1.0]) == 2.0
    # per item, its passes' (margin, best other option right)
    reading = {"p1": [(2.0, False), (1.8, False)], "p2": [(0.5, False), (3.0, False)]}
    reading |= {
        "p3": [(3.0, True), (2.0, True)],
        "c1": [(1.0, True), (1.2, False)],
        "c2": [(-1.0, False)] * 2,
    }
    pairs = [("p1", "c1"), ("p2", "c1"), ("p3", "c2")]
    # cut 0: every perturbed item abstained on, c1 abstained on, c2 answered wrong: no pair trusted
    assert diag.at_cut(reading, pairs, 0.0) == {
        "abstains perturbed": 100.0,
        "abstains clean": 50.0,
        "paired trust, vanilla": 0.0,
        "paired trust, circular": 0.0,
        "undecided": 0,
    }
    # cut 1.5, first pass: p1 and p3 abstained on, both twins answered, only c1 right: the pair (p1, c1);
    # every pass: c1's second pass picks a wrong option, so no pair holds
    got = diag.at_cut(reading, pairs, 1.5)
    assert got["abstains clean"] == 0.0 and got["paired trust, circular"] == 0.0
    assert got["abstains perturbed"] == pytest.approx(200 / 3)
    assert got["paired trust, vanilla"] == pytest.approx(100 / 3)
    reading["c1"][1] = (1.2, True)  # right on every pass: (p1, c1) holds circularly, p2's first pass does not
    assert diag.at_cut(reading, pairs, 1.5)["paired trust, circular"] == pytest.approx(100 / 3)
    # a pass the evaluation never ran (it stopped the item at its first failure at the run's own cut) counts as
    # wrong: the circular figure is a lower bound, and the pair it leaves open is counted
    reading["c1"][1] = None
    got = diag.at_cut(reading, pairs, 1.5)
    assert got["paired trust, circular"] == 0.0 and got["undecided"] == 1
    assert got["paired trust, vanilla"] == pytest.approx(100 / 3)


def test_the_diagnosis_names_what_is_missing(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"records\.rank"):  # a folder that is not an evaluation
        margins.readings(tmp_path, {}, "per_token")
    with pytest.raises(ValueError, match="--runs"):
        diag.main(["--source", str(tmp_path)])
    with pytest.raises(FileNotFoundError, match="lookup_tables.json"):
        diag.main(["--source", str(tmp_path), "--runs", "r"])
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "lookup_tables.json").write_text('{"t2": {"Animal": ["Dog"]}}')
    with pytest.raises(ValueError, match="'Music'"):
        diag.main(["--source", str(tmp_path), "--runs", "r"])


@pytest.mark.slow
@pytest.mark.timeout(1500)  # every part end to end: 532 s quiet-ish, over the suite's 600 s on a busy machine
def test_ladder_end_to_end_on_a_small_quickstart(tmp_path):
    """A --preset small quickstart, then every part of the ladder at tiny budgets: stage markers with wall times, the
    report and plots; the checkpoint at step N is bit for bit the run trained to N steps."""
    from cavpref.apps.quickstart import QuickstartConfig, run

    run(QuickstartConfig(out=str(tmp_path / "qs"), preset="small"))
    args = ["--source", str(tmp_path / "qs"), "--out", str(tmp_path / "lad"), "--budgets", "2", "4"]
    args += [
        "--save_every",
        "2",
        "--epochs",
        "0",
        "--warmup_steps",
        "1",
        "--methods",
        "dpo",
        "cavpref_paper_anchor",
    ]
    args += [
        "--parts",
        "start",
        "ceiling",
        "ceiling_weighted",
        "curves",
        "decisive",
        "--decisive_steps",
        "2",
        "4",
        "--decisive_seeds",
        "0",
        "1",
    ]
    args += ["--decisive_methods", "ceiling", "dpo", "--decisive_mixes", "clean"]
    assert ladder.main(args) == 0
    lad = tmp_path / "lad"
    done = {str(p.parent.relative_to(lad)) for p in lad.glob("**/.done.json")}
    assert {"start/eval", "ceiling/data", "ceiling/run", "ceiling/run/eval/00004", "curves/paper/dpo"} <= done
    assert {
        "curves/clean/cavpref_paper_anchor/eval/00002",
        "decisive/1/ceiling",
        "decisive/1/clean/dpo/eval/00002",
        "decisive/1/clean/dpo/eval/00004",  # one run per seed, evaluated at both decisive budgets
        "ceiling_weighted/run/eval/00004",
    } <= done
    assert all("seconds" in json.loads((lad / d / ".done.json").read_text()) for d in done)
    text = (lad / "ladder.md").read_text()
    assert "## Which option score moves" in text and "## Decisive table (2 steps" in text
    assert "## Decisive table (4 steps" in text
    dec = json.loads((lad / "ladder.json").read_text())["decisive"]["2"]["clean/dpo"]
    assert dec["n"] == 2 and 0 <= dec["separation"][0] <= 100  # mean over the seeds of each run's separation
    assert (lad / "plots" / "ladder_paired_trust.png").stat().st_size > 0
    # re-rendered from the stages' results under another protocol, with the ladder's own keys
    assert report.main(["--out", str(lad), "--option_score", "sum"]) == 0
    assert "likelihood read **sum**" in (lad / "ladder.md").read_text()
    # every preference run read the reference log-probs its mix's ref stage cached (the reference-cache key,
    # derived from the collator and the model I/O's settings, is the same): no run added an entry of its own
    refs = list(lad.glob("ref/**/.done.json"))
    assert len(refs) == 6 and len(list((lad / "ref_cache").iterdir())) == len(refs)
    rec = json.loads((lad / "ceiling" / "data" / ".done.json").read_text())
    assert rec["rows"] == rec["perturbed"] + rec["clean_twins"] and rec["clean_twins"] > 0
    weighted = json.loads((lad / "ceiling_weighted" / "data" / ".done.json").read_text())
    assert (
        weighted["rows"] == weighted["perturbed"] + 4 * weighted["clean_twins"]
        and weighted["clean_copies"] == 4
    )
    assert (weighted["perturbed"], weighted["clean_twins"]) == (rec["perturbed"], rec["clean_twins"])
    # seed 1's 2-step DPO run (its own run folder) vs seed 0's: a different run; seed 0's 2-step checkpoint
    # equals a fresh 2-step run of the same recipe
    recipe = lad / "recipes" / "curves__clean__dpo.yaml"
    fresh = tmp_path / "fresh"
    from cavpref.train import main as train_main

    assert train_main([str(recipe), "--output_dir", str(fresh), "--max_steps", "2"]) == 0
    a = (lad / "curves" / "clean" / "dpo" / "checkpoint-2" / "model.safetensors").read_bytes()
    assert (fresh / "model.safetensors").read_bytes() == a
    # the diagnosis reads the same evaluations: one row per run, the clean items counted by option mix
    runs = [str(lad / "start" / "eval"), str(lad / "ceiling" / "run" / "eval" / "00004")]
    assert diag.main(["--source", str(tmp_path / "qs"), "--runs", *runs]) == 0


def test_every_rotation_moves_the_responses_with_their_options():
    """A row prep showed under its drawn rotation comes back under every rotation, the chosen answer at the
    letter its text moved to (pass k shows option k+1's text under A); a wrong seed is refused."""
    from dataclasses import replace

    from cavpref.data import BenchmarkItem, PreferenceExample
    from cavpref.data_prep.build.rotation import rotate_preference
    from cavpref.prompts import rotation_for

    options = {"A": "x", "B": "y", "C": "None of the above"}
    item = BenchmarkItem("MVIT:i:r1", "MVIT", "avqa", "Count", "Q?", options, "C", "instruction", 0, "", "C")
    orig = PreferenceExample("MVIT:i:r1", "MVIT", "avqa", "Count", "", "{}", "C. None of the above", "A. x")
    shown = rotate_preference(
        replace(orig, media='{"op":"source","path":"a.mp4"}'), item, rotation_for(0, item.id, options)
    )
    rows = ladder_rows.every_rotation([shown.to_row()], {item.id: item}, seed=0)
    assert [(r["id"], r["chosen"], r["rejected"]) for r in rows] == [
        ("MVIT:i:r1:rot0", "C. None of the above", "A. x"),
        ("MVIT:i:r1:rot1", "B. None of the above", "C. x"),
        ("MVIT:i:r1:rot2", "A. None of the above", "B. x"),
    ]
    other = next(
        s for s in range(1, 50) if rotation_for(s, item.id, options) != rotation_for(0, item.id, options)
    )
    with pytest.raises(ValueError, match="not under rotation"):
        ladder_rows.every_rotation([shown.to_row()], {item.id: item}, seed=other)
