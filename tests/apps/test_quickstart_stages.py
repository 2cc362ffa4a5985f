"""The stage runner under several processes (the science script's stages may be produced by several at once):
a stage another process is running is waited for and reused, never run twice."""

import multiprocessing as mp
import time

from cavpref.apps.quickstart.stages import Stages


def _slow_stage(cfg, stage, counter):
    with open(counter, "a") as f:
        f.write("ran\n")
    time.sleep(1.0)
    stage.dir.mkdir(parents=True, exist_ok=True)
    stage.finish(by="first")


def _run(root, counter, delay):
    time.sleep(delay)
    st = Stages(None, root)("seeds/1/dpo", _slow_stage, counter)
    assert st.done and st.info() == {"by": "first"}


def test_a_stage_running_in_another_process_is_waited_for_and_reused(tmp_path, capfd):
    counter = tmp_path / "counter"
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=_run, args=(tmp_path / "run", counter, d)) for d in (0.0, 0.3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0, 0]
    assert counter.read_text() == "ran\n"  # once, though both processes asked for it
    out = capfd.readouterr().out
    assert "another process is running it, waiting" in out and "done by another process, reused" in out
    assert not (tmp_path / "run" / "seeds" / "1" / "dpo" / ".lock").exists()  # the lock is outside the stage


def test_recipes_calibrate_beta_for_cavpref_only_and_keep_a_fixed_beta_row(tmp_path):
    from cavpref.apps.quickstart import QuickstartConfig, recipe

    def make(cfg, method):
        return recipe(
            cfg,
            method=method,
            model=tmp_path,
            train=tmp_path,
            world=tmp_path,
            out=tmp_path,
            steps=4,
            lr=1e-4,
            tasks=["MCIT"],
        )

    on = QuickstartConfig(preset="small")  # calibrate_beta is the default
    assert on.calibrate_beta
    for method in ("cavpref", "cavpref_norobust"):
        assert not {"beta_y", "beta_v", "beta_a"} & set(make(on, method)), method  # unset = calibrated
    fixed = make(on, "cavpref_fixed_beta")
    assert fixed["method"] == "cavpref" and fixed["beta_y"] == fixed["beta_v"] == fixed["beta_a"] == 0.1
    assert make(on, "dpo")["beta"] == 0.1 and make(on, "dpo")["method"] == "dpo"
    assert make(on, "sft")["audio_max_seconds"] == 4.0  # the world's clip length, not the 30-s default
    off = QuickstartConfig(preset="small", calibrate_beta=False)
    assert make(off, "cavpref")["beta_v"] == 0.1


def test_each_stage_says_which_of_how_many_it_is(tmp_path, capsys):
    """First-contact point h: with the run's plan, every progress line says "stage k of N" and the time so
    far; the run's plan lists every stage ``run`` goes through (a stage outside it would show no count)."""
    from cavpref.apps.quickstart import QuickstartConfig
    from cavpref.apps.quickstart.pipeline import stage_plan

    def finish(cfg, stage):
        stage.dir.mkdir(parents=True, exist_ok=True)
        stage.finish()

    stages = Stages(None, tmp_path, ["a", "b", "c"])
    stages("b", finish)
    stages("b", finish)
    out = capsys.readouterr().out
    assert "[quickstart] stage 2 of 3 (0:00 so far): b: running ..." in out
    assert "stage 2 of 3 (0:00 so far): b: done before, reused" in out
    plan = stage_plan(QuickstartConfig(preset="small", methods=["dpo"], calibrate_beta=False))
    assert (
        plan[:2] == ["world", "data"] and plan[-3:] == ["dpo", "eval/start", "eval/dpo"] and len(plan) == 11
    )
