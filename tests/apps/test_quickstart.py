"""`cavpref quickstart --preset small` end to end: every stage's real output, then a second run that reuses them all.

This is the pipeline check CI runs (tiny world, a few steps); it asserts what the pipeline wrote, not the
science (the full-size numbers are in cavpref_lab/science/README.md).
"""

import json
import re
import time

import pytest
import yaml
from datasets import load_from_disk

from cavpref.apps.cli import main as cli_main
from cavpref.apps.quickstart import DEFAULT_METHODS, METHODS, QuickstartConfig, clean_chance
from cavpref.data import CLEAN_TASK, TASKS
from cavpref.media.spec import from_json, has_audio, has_video
from tests.helpers.html_report_check import rows_by_id

STAGES = [
    "world",
    "scorers",
    "data",
    "model_init",
    "start_data",
    "caption_world",
    "caption_data",
    "start_captions",
    "start",
    *METHODS,
    *(f"eval/{n}" for n in ("start", *METHODS)),
]


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("qs") / "run"
    t0 = time.perf_counter()
    assert cli_main(["quickstart", "--preset", "small", "--out", str(out), "--methods", *METHODS]) == 0
    return out, time.perf_counter() - t0


def test_small_run_writes_every_stage_and_the_report(small_run):
    out, _ = small_run
    for name in STAGES:
        assert (out / name / ".done.json").exists(), name
    for method in ("start", *METHODS):  # trained checkpoints load through the normal HF path
        assert (out / method / "model.safetensors").exists()
        assert (out / method / "config.json").exists()
    cfg = json.loads((out / "quickstart_config.json").read_text())
    assert cfg["preset"] == "small" and cfg["sft_steps"] == 6 and cfg["eval_limit"] == 3
    # the captions-only stage trains first, on the caption rows alone, and the starting SFT goes on from it
    captions = yaml.safe_load((out / "recipes" / "start_captions.yaml").read_text())
    start = yaml.safe_load((out / "recipes" / "start.yaml").read_text())
    assert captions["model_name_or_path"] == str(out / "model_init") and captions["max_steps"] == 2
    assert captions["train_dataset"] == str(out / "caption_data" / "train") and not captions["freeze_vision"]
    assert captions["media_root"] == str(out / "caption_world") and start["model_name_or_path"] == str(
        out / "start_captions"
    )
    # every clip of the caption world, three captions each, and none of them a clip of the run's world
    caption_world = json.loads((out / "caption_world" / "world.json").read_text())
    clips = [c for src in ("music_avqa", "avqa", "audioset") for c in caption_world[src]]
    caption_rows = load_from_disk(str(out / "caption_data" / "train"))
    assert len(caption_rows) == 3 * len(clips) == 3 * 3 * cfg["caption_clips"]
    assert {f for ids in caption_rows["source_ids"] for f in ids} == {c["file"] for c in clips}
    assert all(has_video(from_json(m)) and has_audio(from_json(m)) for m in caption_rows["media"])
    run_world = json.loads((out / "world" / "world.json").read_text())
    assert caption_world["seed"] != run_world["seed"]
    for name in ("start", *METHODS):
        res = json.loads((out / "eval" / name / "results.json").read_text())
        tasks = res["metrics"]["settings"]["instruction"]["tasks"]
        assert CLEAN_TASK in tasks and len(tasks) >= 6 and set(tasks) <= {*TASKS, CLEAN_TASK}
        for block in tasks.values():
            assert 0.0 <= block["circular"] <= block["vanilla"] <= 100.0  # circular needs every pass right
            assert block["n"] <= 3  # the small preset: eval_limit 3 per task and setting
    # the training recipes were written and the pref stages started from the SFT'd starting model
    dpo = (out / "recipes" / "dpo.yaml").read_text()
    assert f"model_name_or_path: {out / 'start'}" in dpo and "method: dpo" in dpo
    assert f"train_dataset: {out / 'data' / 'preferences'}" in dpo  # prep's rows, rotated by prep itself
    # β: CAVPref calibrates it from the deltas prep filled with the tiny scorers; the fixed-β row pins it
    recipes = {m: yaml.safe_load((out / "recipes" / f"{m}.yaml").read_text()) for m in METHODS}
    assert "beta_y" not in recipes["cavpref"] and "beta_v" not in recipes["cavpref_norobust"]
    assert (
        recipes["cavpref_fixed_beta"]["method"] == "cavpref"
        and recipes["cavpref_fixed_beta"]["beta_y"] == 0.1
    )
    assert recipes["dpo"]["beta"] == 0.1
    # the anchored row is CAVPref's recipe plus mDPO's anchor on each term, β calibrated, every term logged
    anchored = recipes["cavpref_anchored"]
    assert anchored["method"] == "cavpref" and "beta_y" not in anchored
    assert anchored["loss_type"] == ["cavpref_y", "cavpref_v", "cavpref_a", "ancpo_y", "ancpo_v", "ancpo_a"]
    logged = json.loads((out / "cavpref_anchored" / "logs.jsonl").read_text().splitlines()[0])
    assert {f"term/{t}" for t in anchored["loss_type"]} <= set(logged)
    # one persistent data-loader worker collates the next batch while the step runs (bit-identical weights:
    # tests/trainer/test_train_determinism.py)
    assert all(
        r["dataloader_num_workers"] == 1 and r["dataloader_persistent_workers"] for r in recipes.values()
    )
    assert json.loads((out / "scorers" / ".done.json").read_text())["threads"] == 1  # pinned before training
    assert (out / "scorers" / "clap" / "config.json").exists() and (
        out / "scorers" / "clip" / "config.json"
    ).exists()
    prefs = load_from_disk(str(out / "data" / "preferences"))["train"]
    scored = [d for d in prefs["clap_delta"] if d is not None]
    assert len(scored) > len(prefs) // 2 and len(set(scored)) > 1  # real, varying deltas, not a constant
    assert any(d is not None for d in prefs["avsm_delta_v"])


def test_report_has_table5_clean_categories_and_plot(small_run):
    out, _ = small_run
    report = (out / "report.md").read_text()
    start = json.loads((out / "eval" / "start" / "results.json").read_text())
    evaluated = start["metrics"]["settings"]["instruction"]["tasks"]
    header = "| Method | " + " | ".join(t for t in [*TASKS, CLEAN_TASK] if t in evaluated) + " |"
    assert report.count(header) == 2  # circular and vanilla Table-5 layouts
    # the trust metrics ride along: computed reference rows, the paired score and abstention tables (issue 19)
    assert (
        report.count("| always abstain (computed) |") == 6
        and report.count("| never abstain (computed) |") == 6
    )
    assert report.count("| Method (paired %) |") == 2 and report.count("| Method (abstention %) |") == 2
    for label in ("ZS (start) (zero-shot)", "| SFT |", "| DPO |", "CAVPref w/o Robustness", "| CAVPref |"):
        assert label in report
    clean = start["metrics"]["settings"]["instruction"]["tasks"][CLEAN_TASK]["vanilla"]
    m = re.search(r"vanilla ([0-9.]+) % \(chance ([0-9.]+) %\)", report)
    assert m and float(m.group(1)) == pytest.approx(clean, abs=0.01)
    assert float(m.group(2)) == pytest.approx(clean_chance(out / "data", 3), abs=0.01)
    assert "## Per category" in report and "## CLEAN after training" in report
    # every calibrated method named, the anchored one too (the sentence once named two by hand)
    assert (
        "stage `scorers`) for CAVPref w/o Robustness, CAVPref, CAVPref + anchored preference; fixed at 0.1 for "
        "SFT, DPO, CAVPref (fixed β)." in report
    )
    png = out / "plots" / "methods.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # every table section says what its cells are computed on (first-contact point f: the limit was hidden)
    sections = re.split(r"\n## ", report)[1:]
    tables = [s for s in sections if not s.startswith("Stage wall time")]
    cells = "Cells: the first 3 test items of each task, instruction setting (--eval_limit 0: all of them)"
    assert len(tables) == 5 and all(s.split("\n")[2].startswith(cells) for s in tables), tables
    assert f"CLEAN {evaluated[CLEAN_TASK]['n']}." in report


def test_report_leads_with_what_training_did_to_trust(small_run):
    """Issue 56: the first section is the trust table (start and every method, then the computed reference
    rows), with its PNG and one sentence per trained method; its numbers are the evaluations' own."""
    out, _ = small_run
    report = (out / "report.md").read_text()
    first = re.split(r"\n## ", report)[1]
    assert first.startswith("What training did to trust")
    start = json.loads((out / "eval" / "start" / "results.json").read_text())
    paired = start["metrics"]["trust"]["settings"]["instruction"]["paired"]
    row = next(x for x in first.splitlines() if x.startswith(("| ZS (start) |", "| start |")))
    assert row.split(" | ")[1].startswith(f"{paired['circular']:.2f}")
    for label in ("| always abstain |", "| never abstain |", "| DPO |", "| CAVPref |"):
        assert label in first, label
    assert "![trust](plots/trust.png)" in first
    assert (out / "plots" / "trust.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert re.search(r"- DPO: paired trust [0-9.]+ → [0-9.]+ %, false abstention", first)


def test_every_evaluation_has_its_html_report(small_run):
    """Each method's evaluation writes report.html (issue 43): every item of its results.json, the evaluated
    ones with their passes and what they were shown and played; the quickstart's report.md points at the pages."""
    out, _ = small_run
    for name in ("start", *METHODS):
        run = out / "eval" / name
        results = json.loads((run / "results.json").read_text())
        rows = rows_by_id(run / "report.html")
        assert len(rows) == results["counts"]["items"] > 0
        evaluated = [r for r in rows.values() if r["facets"]["status"] == "evaluated"]
        assert len(evaluated) == results["counts"]["evaluated"] and all(r["passes"] for r in evaluated)
        shown = [r["media"][k] for r in evaluated for k in ("strip", "audio") if k in r["media"]]
        assert all((run / f).is_file() for f in shown) and all("error" not in r["media"] for r in evaluated)
        assert sum(f.endswith(".jpg") for f in shown) > len(evaluated) // 2  # MVT items have no frames
    assert "`eval/<method>/report.html`" in (out / "report.md").read_text()


def test_limit_0_means_every_item_in_eval_and_quickstart(small_run):
    """One meaning of a limit everywhere (first-contact point e): N > 0 the first N items of each task, 0 or
    unset all of them, negative an error."""
    from cavpref.data import check_limit
    from cavpref.eval.benchmarks.avtrustbench.reader import load_items
    from cavpref.eval.common import select

    out, _ = small_run
    every = load_items(out / "data", split="test").items
    assert len(load_items(out / "data", split="test", limit=0).items) == len(every) > 0
    first = load_items(out / "data", split="test", limit=1).items  # one item per task and setting
    assert len(first) == len({(i.task, i.setting) for i in every}) < len(every)
    # the other benchmarks' readers select through eval.common.select: the same meaning
    assert len(select(every, [], 0)) == len(select(every, [], None)) == len(every)
    assert len(select(every, [], 1)) == len({i.task for i in every})
    assert check_limit(0) is None and check_limit(None) is None and check_limit(5) == 5
    with pytest.raises(ValueError, match="limit must be >= 0"):
        check_limit(-1)
    assert QuickstartConfig(eval_limit=0).eval_limit == 0


def test_second_run_reuses_every_stage(small_run, capsys):
    out, first = small_run
    before = {n: (out / n / ".done.json").stat().st_mtime_ns for n in STAGES}
    t0 = time.perf_counter()
    assert cli_main(["quickstart", "--preset", "small", "--out", str(out), "--methods", *METHODS]) == 0
    second = time.perf_counter() - t0
    said = capsys.readouterr().out
    for name in STAGES:
        assert f"{name}: done before, reused" in said
        assert (out / name / ".done.json").stat().st_mtime_ns == before[name]
    assert second < first / 3, (first, second)


def _stage_again(small_run, tmp_path, name: str, **keys) -> tuple[dict, dict, object]:
    """(the small run's own ``name`` stage info, the info and rows of the same stage rebuilt in ``tmp_path``
    with config ``keys`` changed): what one key adds to a data stage."""
    from cavpref.apps.quickstart import data
    from cavpref.apps.quickstart.stages import Stage

    out, _ = small_run
    cfg = QuickstartConfig(**{**json.loads((out / "quickstart_config.json").read_text()), **keys})
    stage = Stage(tmp_path, name)
    world = out / ("caption_world" if name == "caption_data" else "world")
    getattr(data, name)(cfg, stage, world, out / "data")
    return Stage(out, name).info(), stage.info(), load_from_disk(str(stage.dir / "train"))


def test_caption_repeats_multiplies_only_the_caption_rows(small_run, tmp_path):
    once_repeats = json.loads((small_run[0] / "quickstart_config.json").read_text())["caption_repeats"]
    once, more, rows = _stage_again(small_run, tmp_path, "start_data", caption_repeats=once_repeats + 2)
    assert more["clean"] == once["clean"] and more["clips"] == once["clips"]
    assert more["captions"] * once_repeats == once["captions"] * (once_repeats + 2) > 0
    ids = rows["id"]
    assert len(ids) == len(set(ids)) == more["clean"] + more["captions"]


def test_muted_see_adds_see_rows_without_the_audio(small_run, tmp_path):
    plain, info, rows = _stage_again(small_run, tmp_path, "caption_data", muted_see=2)
    assert len(rows) == len(set(rows["id"])) == info["captions"] == plain["captions"] * (3 + 2) // 3
    muted = [r for r in rows if ":muted:" in r["id"]]
    assert len(muted) == 2 * plain["clips"] and {r["prompt"] for r in muted} == {
        "What do you see, from left to right?"
    }
    assert all(has_video(from_json(r["media"])) and not has_audio(from_json(r["media"])) for r in muted)
    assert all(has_audio(from_json(r["media"])) for r in rows if ":muted:" not in r["id"])


def test_blind_hear_adds_hear_rows_without_the_video(small_run, tmp_path):
    plain, _, rows = _stage_again(small_run, tmp_path, "caption_data", blind_hear=1)
    assert len(rows) == len(set(rows["id"])) == plain["captions"] + plain["clips"]
    blind = [r for r in rows if ":blind:" in r["id"]]
    assert len(blind) == plain["clips"] and {r["prompt"] for r in blind} == {
        "What do you hear, in order of onset?"
    }
    assert all(has_audio(from_json(r["media"])) and not has_video(from_json(r["media"])) for r in blind)
    heard = {r["id"].replace(":blind:0", ":1"): r["chosen"] for r in blind}
    assert all(heard[r["id"]] == r["chosen"] for r in rows if r["id"] in heard)  # the clip's own hear caption
    assert all(has_video(from_json(r["media"])) for r in rows if ":blind:" not in r["id"])
    with pytest.raises(ValueError, match="blind_hear"):
        QuickstartConfig(blind_hear=-1)


def test_caption_places_reach_both_sft_stages(small_run, tmp_path):
    from cavpref.apps.quickstart.data import caption_data, start_data
    from cavpref.apps.quickstart.stages import Stage

    out, _ = small_run
    cfg = QuickstartConfig(**json.loads((out / "quickstart_config.json").read_text()))
    cfg.caption_places = "label"
    where = "Which objects are sounding, and where?"
    for name, fn, world in (
        ("caption_data", caption_data, "caption_world"),
        ("start_data", start_data, "world"),
    ):
        stage = Stage(tmp_path, name)
        fn(cfg, stage, out / world, out / "data")
        answers = [r["chosen"] for r in load_from_disk(str(stage.dir / "train")) if r["prompt"] == where]
        placed = [a for a in answers if a != "Nothing"]
        assert placed and all(": " in a and " the " not in a for a in placed), (name, answers[:5])


def test_start_keys_reach_the_recipes_and_the_thinker(small_run, tmp_path):
    """--caption_learning_rate and --frame_size change what the start stages train."""
    import shutil

    from cavpref.apps.quickstart import Stages
    from cavpref.apps.quickstart.pipeline import start_stages

    out, _ = small_run
    run = tmp_path / "run"
    shutil.copytree(
        out, run, ignore=shutil.ignore_patterns("model_init", "start_captions", "start", ".locks")
    )
    cfg = QuickstartConfig(preset="small", out=str(run), caption_learning_rate=1e-3, frame_size=84)
    start_stages(cfg, Stages(cfg, run))
    captions = yaml.safe_load((run / "recipes" / "start_captions.yaml").read_text())
    start = yaml.safe_load((run / "recipes" / "start.yaml").read_text())
    assert captions["learning_rate"] == 1e-3 and start["learning_rate"] == cfg.sft_learning_rate == 5e-4
    assert start["frame_height"] == start["frame_width"] == captions["frame_width"] == 84
    video = json.loads((run / "model_init" / "processor_config.json").read_text())["video_processor"]
    assert video["size"] == {"shortest_edge": 84 * 84, "longest_edge": 84 * 84}
    assert (run / "start" / "model.safetensors").exists()


def test_background_ramp_reaches_both_worlds(tmp_path):
    from cavpref.apps.quickstart import Stages
    from cavpref.apps.quickstart.pipeline import caption_world_stage, world_stage

    cfg = QuickstartConfig(
        preset="small", out=str(tmp_path), background_ramp=30, num_clips=2, caption_clips=2
    )
    stages = Stages(cfg, tmp_path)
    for name, fn in (("world", world_stage), ("caption_world", caption_world_stage)):
        manifest = json.loads((stages(name, fn).dir / "world.json").read_text())
        assert manifest["config"]["background_ramp"] == 30


def test_caption_wordings_of_where_and_see():
    from cavpref.apps.quickstart.data import clip_captions

    clip = {
        "instruments": [
            {"name": "violin", "visible": True, "slot": "middle", "sounding": True, "first_onset": 0.1},
            {"name": "bass_drum", "visible": False, "slot": None, "sounding": True, "first_onset": 0.5},
            {"name": "flute", "visible": True, "slot": "left", "sounding": False, "first_onset": 0.0},
            {"name": "cello", "visible": True, "slot": "right", "sounding": True, "first_onset": 0.0},
        ]
    }
    see, hear, where = clip_captions(clip)
    assert see[1] == "Flute, Violin, Cello" and hear[1] == "Cello, Violin, Bass drum"
    assert where[1] == "Cello on the right, Violin in the middle, Bass drum off screen"
    # label: the place word without a preposition, still in order of onset
    assert clip_captions(clip, "label")[:2] == [see, hear]
    assert clip_captions(clip, "label")[2] == (
        where[0],
        "Cello: right, Violin: middle, Bass drum: off screen",
    )
    # see="slots": the column word before each name; hear and where as before
    slots = clip_captions(clip, "label", see="slots")
    assert slots[0] == (see[0], "left: Flute, middle: Violin, right: Cello")
    assert slots[1:] == clip_captions(clip, "label")[1:]
    assert clip_captions({"instruments": []}, see="slots")[0][1] == "Nothing"
    with pytest.raises(ValueError, match="places must be one of"):
        clip_captions(clip, "word")
    with pytest.raises(ValueError, match="see must be one of"):
        clip_captions(clip, see="columns")


def test_muted_and_blind_caption_probes_ask_of_clips_without_a_stream(small_run, monkeypatch):
    from cavpref.apps.quickstart import stage_folders
    from cavpref.models.registry import load_model_io
    from cavpref_lab.science import quickstart_science as science

    out, _ = small_run
    cfg = QuickstartConfig(**json.loads((out / "quickstart_config.json").read_text()))
    seen = []

    def recording_loader(*args, **kwargs):  # the real model I/O; remember what each generate call was given
        io = load_model_io(*args, **kwargs)
        generate = io.generate
        io.generate = lambda model, rows, **kw: seen.extend(rows) or generate(model, rows, **kw)
        return io

    monkeypatch.setattr(science, "load_model_io", recording_loader)
    lines, acc = science.caption_probe(cfg, stage_folders(out), drop="audio")
    assert list(acc) == ["What do you see, from left to right?"] and "audio removed" in lines[0]
    assert seen and all(r.media.audio is None and r.media.frames is not None for r in seen)
    seen.clear()
    lines, acc = science.caption_probe(cfg, stage_folders(out), drop="video")
    assert list(acc) == ["What do you hear, in order of onset?"] and "video removed" in lines[0]
    assert seen and all(r.media.audio is not None and r.media.frames is None for r in seen)
    seen.clear()
    _, both = science.caption_probe(cfg, stage_folders(out))
    assert len(both) == 3 and all(r.media.audio is not None for r in seen)


def test_clean_chance_is_mean_inverse_option_count(tmp_path):
    from datasets import Dataset, DatasetDict

    rows = [
        {"id": "a", "setting": "instruction", "option_letters": ["A", "B"]},
        {"id": "b", "setting": "instruction", "option_letters": ["A", "B", "C", "D"]},
        {"id": "c", "setting": "base", "option_letters": ["A", "B", "C"]},
    ]
    DatasetDict({"test": Dataset.from_list(rows)}).save_to_disk(str(tmp_path / "benchmark" / CLEAN_TASK))
    assert clean_chance(tmp_path) == pytest.approx(100 * (1 / 2 + 1 / 4) / 2)  # base items are not scored
    assert clean_chance(tmp_path, limit=1) == pytest.approx(50.0)


def test_presets_resolve_and_explicit_keys_win():
    small, full = QuickstartConfig(preset="small"), QuickstartConfig()
    perceiving = QuickstartConfig(preset="perceiving")
    assert small.num_clips < full.num_clips and small.sft_steps < full.sft_steps
    assert full.eval_limit == 40 and small.eval_limit == 3 and full.eval_mode == "likelihood"
    assert full.methods == list(DEFAULT_METHODS) and set(DEFAULT_METHODS) < set(METHODS)  # more on request
    assert QuickstartConfig(preset="small", sft_steps=7).sft_steps == 7  # explicit values win over the preset
    # the perceiving preset: the start that sees and hears (docs/quickstart.md), the default's sizes otherwise
    assert (perceiving.hidden_size, perceiving.frame_size, perceiving.num_frames) == (256, 84, 4)
    assert (perceiving.caption_places, perceiving.caption_see, perceiving.blind_hear) == ("label", "slots", 1)
    assert (perceiving.sft_steps, perceiving.sft_learning_rate, perceiving.num_clips) == (3000, 1e-4, 96)
    with pytest.raises(ValueError, match="--preset must be one of"):
        QuickstartConfig(preset="tiny")
    with pytest.raises(ValueError, match="--eval_limit must be >= 0"):
        QuickstartConfig(eval_limit=-1)
    with pytest.raises(ValueError, match="--methods"):
        QuickstartConfig(methods=["ppo"])
    with pytest.raises(ValueError, match="--eval_mode"):  # refused before any stage runs
        QuickstartConfig(eval_mode="loglik")


def test_caption_stage_keys_are_checked_before_any_stage():
    with pytest.raises(ValueError, match="--caption_clips must be >= 1"):
        QuickstartConfig(caption_steps=10, caption_clips=0)
    with pytest.raises(ValueError, match="--caption_steps must be >= 0"):
        QuickstartConfig(caption_steps=-1)
    with pytest.raises(
        ValueError, match=r"world key .*WorldConfig\.background_ramp=200: must be within 0\.\.127"
    ):
        QuickstartConfig(background_ramp=200)
    with pytest.raises(ValueError, match="--caption_places must be phrase or label"):
        QuickstartConfig(caption_places="word")
    with pytest.raises(ValueError, match="--caption_see must be names or slots"):
        QuickstartConfig(caption_see="columns")
    assert QuickstartConfig(caption_steps=0, caption_clips=0).caption_clips == 0  # no captions stage: unused
