"""The science script's tables: per-seed mean ± sample std and the paired CAVPref − DPO difference,
checked against numbers worked out by hand (the runs themselves are measured in the README)."""

import importlib.util
import sys
from pathlib import Path

import pytest

from cavpref.data import CLEAN_TASK, TASKS

spec = importlib.util.spec_from_file_location(
    "quickstart_science", Path(__file__).parents[1] / "scripts" / "quickstart_science.py"
)
science = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = science  # a dataclass reads its module's namespace while it is defined
spec.loader.exec_module(science)


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
    assert lines[-1].startswith("| CAVPref − DPO (paired by seed) | ")


def test_group_mean_skips_tasks_without_items():
    res = results({"MVIT": 40, "MAIT": 20})
    del res["metrics"]["settings"]["instruction"]["tasks"]["MAT"]
    assert science.group_mean(res, ("MVIT", "MAIT", "MAT")) == pytest.approx(30.0)  # (40 + 20) / 2, not / 3
