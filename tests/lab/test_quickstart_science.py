"""The science script's tables: per-seed mean ± sample std and the paired CAVPref − DPO difference,
checked against numbers worked out by hand (the runs themselves are measured in the README)."""

import pytest

from cavpref.data import CLEAN_TASK, TASKS
from cavpref_lab.science import quickstart_science as science


def results(acc: dict[str, float]) -> dict:
    """A results.json shape with the same circular and vanilla accuracy per task (0 where not given)."""
    tasks = {t: {"circular": acc.get(t, 0.0), "vanilla": acc.get(t, 0.0)} for t in (*TASKS, CLEAN_TASK)}
    return {"metrics": {"settings": {"instruction": {"tasks": tasks}}}}


def test_seeds_table_means_stds_and_paired_difference():
    dpo = {0: results({"MVIT": 80, "CLEAN": 10}), 1: results({"MVIT": 60, "CLEAN": 30})}
    cav = {0: results({"MVIT": 50, "MAT": 40, "CLEAN": 20}), 1: results({"MVIT": 50, "MAT": 0, "CLEAN": 20})}
    lines, stats = science.seeds_table({"dpo": dpo, "cavpref": cav}, results({"CLEAN": 80}))
    assert stats["dpo"]["MVIT"] == pytest.approx((70.0, 14.142135), abs=1e-5)  # sample std, ddof=1
    assert stats["cavpref"]["CLEAN"] == (20.0, 0.0)
    # modality mean per run: dpo (80|60)/4 = 20|15, cavpref (50+40)/4 = 22.5 | 50/4 = 12.5
    assert stats["dpo"]["modality (MVIT MAIT MVT MAT)"] == pytest.approx((17.5, 3.535534), abs=1e-5)
    # paired by seed: MVIT -30 | -10 -> mean -20, std 14.14; CLEAN +10 | -10 -> 0, 14.14
    assert stats["cavpref_minus_dpo"]["MVIT"] == pytest.approx((-20.0, 14.142135), abs=1e-5)
    assert stats["cavpref_minus_dpo"]["CLEAN"] == pytest.approx((0.0, 14.142135), abs=1e-5)
    assert lines[2].startswith("| ZS (start) |") and "80.00" in lines[2]
    assert lines[-1].startswith("| CAVPref − DPO (paired by seed, n=2) | ")


def test_seeds_table_carries_the_paired_trust_score_and_false_abstention():
    def with_trust(paired: float, false_abstention: float) -> dict:
        res = results({"MVIT": 50})
        res["metrics"]["trust"] = {
            "settings": {
                "instruction": {
                    "paired": {"n": 8, "vanilla": paired + 10, "circular": paired},
                    "false_abstention": false_abstention,
                }
            }
        }
        return res

    dpo = {0: with_trust(0.0, 90.0), 1: with_trust(10.0, 70.0)}
    cav = {0: with_trust(25.0, 30.0), 1: with_trust(15.0, 50.0)}
    fixed = {1: with_trust(5.0, 60.0)}  # one seed only: paired with CAVPref's seed 1 alone
    _, stats = science.seeds_table({"dpo": dpo, "cavpref": cav, "cavpref_fixed_beta": fixed}, results({}))
    assert stats["dpo"]["paired trust"] == pytest.approx((5.0, 7.071068), abs=1e-5)
    assert stats["cavpref"]["false abstention"] == pytest.approx((40.0, 14.142136), abs=1e-5)
    # paired by seed: trust 25-0 | 15-10 -> 15 ± 14.14; false abstention 30-90 | 50-70 -> -40 ± 28.28
    assert stats["cavpref_minus_dpo"]["paired trust"] == pytest.approx((15.0, 14.142136), abs=1e-5)
    assert stats["cavpref_minus_dpo"]["false abstention"] == pytest.approx((-40.0, 28.284271), abs=1e-5)
    assert stats["cavpref_minus_cavpref_fixed_beta"]["paired trust"] == (10.0, 0.0)  # 15 - 5, seed 1 only
    _, vstats = science.seeds_table({"dpo": dpo}, results({}), "vanilla")
    assert vstats["dpo"]["paired trust"] == pytest.approx((15.0, 7.071068), abs=1e-5)


def test_dynamics_reads_first_and_last_logged_margins(tmp_path):
    import json

    def state(run, first, last):
        run.mkdir(parents=True)
        logs = [
            {"step": 6, "epoch": 0.1, "loss": 0.7, "y/margin": first, "v/reward_accuracy": 0.5},
            {"step": 120, "epoch": 1.0, "loss": 0.2, "y/margin": last, "v/reward_accuracy": 1.0},
            {"step": 120, "epoch": 1.0, "train_runtime": 9.0},  # the end-of-training summary is not a step
        ]
        (run / "trainer_state.json").write_text(json.dumps({"log_history": logs}))

    state(tmp_path / "cavpref", 0.1, 2.0)  # the quickstart's own seed (0)
    state(tmp_path / "seeds" / "1" / "cavpref", 0.3, 4.0)
    cfg = type("Cfg", (), {"seed": 0})()
    lines, stats = science.dynamics({"root": str(tmp_path)}, ("cavpref",), [0, 1], cfg)
    assert stats["cavpref"]["seeds"] == 2 and stats["cavpref"]["last_step"] == 120
    assert stats["cavpref"]["y/margin"] == pytest.approx((0.2, 3.0))  # mean of 0.1 | 0.3 and of 2.0 | 4.0
    assert stats["cavpref"]["v/reward_accuracy"] == pytest.approx((0.5, 1.0))
    assert stats["cavpref"]["a/margin"] is None  # never logged
    assert "0.2 → 3" in lines[-1]


def test_group_mean_skips_tasks_without_items():
    res = results({"MVIT": 40, "MAIT": 20})
    del res["metrics"]["settings"]["instruction"]["tasks"]["MAT"]
    assert science.group_mean(res, ("MVIT", "MAIT", "MAT")) == pytest.approx(30.0)  # (40 + 20) / 2, not / 3
