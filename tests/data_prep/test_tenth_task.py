"""A tenth task is one module of its own plus its tests (issue 16): no core file names it.

``tests/data_prep/task_plugin/cavpref_sat_task.py`` declares SAT (its ``TaskSpec`` and generator). The test installs it
the way pip installs a plugin — the module plus a ``*.dist-info`` naming it under the entry-point group
``cavpref.tasks``, on ``sys.path`` — and runs the stages on it: world -> prep -> one CAVPref training step (its
switches, read from the manifest prep wrote, turn the audio term on) -> evaluation. Training starts with the
core's task registry NOT knowing SAT (as in a training process that never imports the plugin): the prep
manifest's task table declares it.

Also here: ``cavpref train`` takes the switch table prep wrote when the recipe sets none, and a recipe's own
``switch_table`` wins (issue 16 B).
"""

from __future__ import annotations

import json
import logging
import shutil
import sys
from pathlib import Path

import pytest
import yaml

from cavpref import task_registry
from tests.helpers import trainer_fixtures as F

pytestmark = pytest.mark.usefixtures("one_thread")
PLUGIN = Path(__file__).resolve().parent / "task_plugin" / "cavpref_sat_task.py"


@pytest.fixture(scope="module")
def installed_plugin(tmp_path_factory):
    """SAT as an installed distribution: what ``pip install`` of a package with that entry point writes."""
    from cavpref.data_prep.tasks import ENTRY_POINT_GROUP, GENERATORS, discover_tasks, remove_task

    site = tmp_path_factory.mktemp("site-packages")
    shutil.copy(PLUGIN, site / PLUGIN.name)
    info = site / "cavpref_sat_task-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cavpref-sat-task\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\nsat = cavpref_sat_task\n")
    sys.path.insert(0, str(site))
    assert "SAT" not in GENERATORS and not task_registry.is_task("SAT")
    discover_tasks()  # what importing cavpref.data_prep.tasks does in a process where the plugin is installed
    yield site
    remove_task("SAT")  # leave the registries as the other tests expect them (the nine tasks + CLEAN)
    sys.path.remove(str(site))
    sys.modules.pop("cavpref_sat_task", None)


@pytest.fixture(scope="module")
def prepped(installed_plugin, tmp_path_factory):
    from cavpref.data_prep.build import PrepConfig, build
    from cavpref.data_prep.synthetic import WorldConfig, generate_world

    root = tmp_path_factory.mktemp("tenth")
    world = root / "world"
    generate_world(
        WorldConfig(out=str(world), seed=3, num_clips=8, workers=1, width=64, height=64, fps=4, duration=2.0)
    )
    out = root / "prep"
    stats = build(
        PrepConfig(
            output_dir=str(out),
            world=str(world),
            tasks=["SAT", "MAT"],
            seed=5,
            split_seed=5,
            formats=["arrow"],
            progress=False,
        )
    )
    return {"world": world, "out": out, "stats": stats, "model": F.tiny_model(root / "model")}


def recipe(path: Path, prepped, **overrides) -> Path:
    cfg = {
        "method": "cavpref",
        "robust": "paper",
        "beta_y": 0.1,  # fixed βs: this prep ran without scoring (no ΔS to calibrate from)
        "beta_v": 0.1,
        "beta_a": 0.1,
        "learning_rate": 0.05,
        "optim": "sgd",
        "lr_scheduler_type": "constant",
        "train_dataset": str(prepped["out"] / "preferences"),
        "train_tasks": ["SAT"],
        "media_root": str(prepped["world"]),
        "per_device_train_batch_size": 2,
        "max_steps": 1,
        "logging_steps": 1,
        "save_strategy": "no",
        "seed": 0,
        "bf16": False,
        "use_cpu": True,
        "activation_checkpointing": False,
        "report_to": "none",
        "disable_tqdm": True,
        "dataloader_num_workers": 0,
        "model_name_or_path": str(prepped["model"]),
        "dtype": "float32",
        "lora_r": 0,
        "num_frames": 2,
        "output_dir": str(path.parent / "run"),
    }
    cfg.update(overrides)
    path.write_text(yaml.safe_dump(cfg))
    return path


def logged(run: Path) -> dict:
    out = {}
    for rec in map(json.loads, (run / "logs.jsonl").read_text().splitlines()):
        out.update(rec)
    return out


def test_prep_generates_the_tenth_task_and_writes_its_facts(prepped):
    from cavpref.data_prep.tasks.schema import load_outputs

    assert prepped["stats"]["tasks"]["SAT"]["items"] > 0 and prepped["stats"]["tasks"]["SAT"]["reconcile"]
    manifest = json.loads((prepped["out"] / "manifest.json").read_text())
    assert manifest["switch_table"]["paper"]["SAT"] == [0, 1]
    assert manifest["tasks"]["SAT"] == {
        "name": "SAT",
        "dimension": "Modality-specific dependency",
        "abstains": True,
        "switches": [0, 1],
        "released_switches": None,
    }
    _, prefs = load_outputs(prepped["out"])
    sat = [p for s in prefs.values() for p in s if p.task == "SAT"]
    assert sat and all(p.audio is not None and p.visual is None for p in sat)  # its draft's audio anchor
    assert "The clip is silent, so I cannot answer." in {p.chosen for p in sat}  # base-setting abstention


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def trained(prepped, tmp_path_factory):
    """One CAVPref step on SAT, in a process whose core does not know SAT (the manifest declares it)."""
    from cavpref.train import main

    root = tmp_path_factory.mktemp("train")
    saved = task_registry.task_info("SAT")
    task_registry.forget_task("SAT")
    capture, logger = _Capture(), logging.getLogger("cavpref.train")
    logger.addHandler(capture)
    try:
        assert main([str(recipe(root / "r.yaml", prepped))]) == 0
        declared = task_registry.task_info("SAT")
    finally:
        logger.removeHandler(capture)
        task_registry.declare_task(saved)
    return {"run": root / "run", "declared": declared, "saved": saved, "log": capture.lines}


def test_train_learns_the_task_from_the_manifest_and_its_switches_reach_the_loss(prepped, trained):
    assert trained["declared"] == trained["saved"]  # the manifest's facts are the plugin's spec's
    run = trained["run"]
    loss = json.loads((run / "loss.json").read_text())
    manifest = str(prepped["out"] / "manifest.json")
    assert loss["switches"]["SAT"] == [0, 1]
    assert loss["switch_table_source"] == f"{manifest} (switch_table.paper)"
    assert f"switch table (eta, gamma per task): {manifest} (switch_table.paper)" in trained["log"]
    metrics = logged(run)
    # γ = 1: the audio term is in the loss, per task too; η = 0: no visual term
    assert metrics["a/n"] == 2 and "task/SAT/a_loss" in metrics and metrics["a/loss"] > 0
    assert not any(k.startswith(("v/", "task/SAT/v_")) for k in metrics)


def test_the_run_and_the_prep_build_write_their_cards(prepped, trained):
    """Issue 41: the run's model card says what was trained on what (base, method, λ / β / robust, switches, the
    data fingerprint, metrics, recipe); the prep folder's dataset card lists the tasks with their switches."""
    from huggingface_hub import DatasetCard, ModelCard

    card = ModelCard.load(trained["run"] / "README.md")
    assert card.data.library_name == "transformers" and {"cavpref", "avtrustbench"} <= set(card.data.tags)
    assert card.data.base_model is None  # a local folder is no hub id (the text names it)
    text = card.text
    assert f"fine-tune of `{prepped['model']}`" in text
    assert json.loads((prepped["out"] / "manifest.json").read_text())["fingerprint"] in text
    for row in ("| method | cavpref |", "| robust aggregation (Eq. 5) | paper |", "| λ (y, v, a) | 1.0, 1.0, 0.8 |",
                "| β (y, v, a) | 0.1, 0.1, 0.1 |", "SAT (0, 1)", f"| loss | {logged(trained['run'])['loss']} |"):  # fmt: skip
        assert row in text, row
    assert "```yaml" in text and "train_tasks:\n- SAT" in text  # the resolved recipe
    data_card = DatasetCard.load(prepped["out"] / "README.md")
    assert "| SAT | Modality-specific dependency | (0, 1) | (0, 1) |" in data_card.text
    assert getattr(data_card.data, "configs", None) is None  # arrow only: no files for the hub's loader


def test_a_recipe_switch_table_wins_over_the_manifest(prepped, tmp_path, caplog):
    from cavpref.train import main

    with caplog.at_level("WARNING", logger="cavpref.train"):
        argv = [str(recipe(tmp_path / "r.yaml", prepped)), "--switch_table", '{"SAT": [0, 0]}']
        assert main(argv) == 0
    loss = json.loads((tmp_path / "run" / "loss.json").read_text())
    assert loss["switches"]["SAT"] == [0, 0] and loss["switch_table_source"] == "the recipe's switch_table"
    assert "switch table (eta, gamma per task): the recipe's switch_table" in caplog.text
    assert not any(k.startswith(("a/", "v/")) for k in logged(tmp_path / "run"))  # no anchor term at all


def test_evaluation_reads_the_tenth_task_from_the_items(prepped, trained, tmp_path):
    from cavpref.eval.pipeline import EvalArgs, evaluate

    results = evaluate(
        EvalArgs(
            model=str(trained["run"]),  # the checkpoint of the training step
            data=str(prepped["out"]),
            output=str(tmp_path / "eval"),
            tasks=["SAT", "MAT"],
            limit=1,
            mode="likelihood",
            media_root=str(prepped["world"]),
            no_judge=True,
            label="tiny",
        ),
        {"split": "train"},
    )
    for setting, block in results["metrics"]["settings"].items():
        assert list(block["tasks"]) == ["MAT", "SAT"], setting  # declaration order: built-ins first
        assert block["tasks"]["SAT"]["n"] == 1
        assert block["dimensions"]["Modality-specific dependency"] is not None
    report = (tmp_path / "eval" / "report.md").read_text()
    assert "| SAT | Modality-specific dependency |" in report


def test_resolve_switch_table(tmp_path):
    """Unit level: the recipe's table, else the manifest's (by switch_variant), else the declared defaults."""
    from cavpref.config import CAVPrefConfig
    from cavpref.manifest import resolve_switch_table
    from cavpref.train import DataArguments

    out = tmp_path / "prep"
    (out / "preferences").mkdir(parents=True)
    table = {"paper": {"CAT": [0, 1]}, "released": {"CAT": [1, 1]}}
    (out / "manifest.json").write_text(json.dumps({"switch_table": table}))
    data = DataArguments(train_dataset=str(out / "preferences"))

    def cfg(**kw):
        return CAVPrefConfig(str(tmp_path / "o"), use_cpu=True, report_to="none", **kw)

    args = cfg()
    assert resolve_switch_table(args, data).endswith("manifest.json (switch_table.paper)")
    assert args.switches()["CAT"] == (0, 1) and args.switches()["MVIT"] == (1, 0)
    args = cfg(switch_variant="released")
    resolve_switch_table(args, data)
    assert args.switches()["CAT"] == (1, 1)
    args = cfg(switch_table='{"CAT": [1, 0]}')
    assert resolve_switch_table(args, data) == "the recipe's switch_table"
    assert args.switches()["CAT"] == (1, 0)
    args = cfg()
    assert "no prep manifest.json" in resolve_switch_table(args, DataArguments(train_dataset=str(tmp_path)))
    assert args.switch_table is None and args.switches()["CAT"] == (0, 0)


def test_the_core_registry_takes_tasks_as_data_and_names_conflicts():
    from cavpref.data import PreferenceExample

    table = {"XT": {"dimension": "Adversarial attack", "abstains": False, "switches": [1, 1]}}
    try:
        assert task_registry.declare_table(table, where="m.json") == ["XT"]
        assert task_registry.declare_table(table, where="m.json") == []  # idempotent
        assert task_registry.switch_table()["XT"] == (1, 1)
        assert "XT" in task_registry.dimensions()["Adversarial attack"]
        row = {"id": "x", "task": "XT", "source": "s", "category": "Count", "prompt": "p", "media": None}
        row.update(chosen="a", rejected="b")
        assert PreferenceExample(**row).task == "XT"  # rows of a declared task are accepted
        with pytest.raises(ValueError, match="m.json: task 'XT' is declared twice"):
            task_registry.declare_table({"XT": {**table["XT"], "switches": [0, 1]}}, where="m.json")
    finally:
        task_registry.forget_task("XT")
    with pytest.raises(ValueError, match="unknown task 'XT'"):
        PreferenceExample(**row)
    with pytest.raises(ValueError, match="m.json: task 'YT': bad entry"):
        task_registry.declare_table({"YT": {"dimension": "Adversarial attack"}}, where="m.json")
    with pytest.raises(ValueError, match="built in"):
        task_registry.forget_task("MAT")
    assert not task_registry.is_task("XT") and task_registry.is_task("MAT")
