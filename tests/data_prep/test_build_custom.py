"""A folder of videos plus a JSONL in the documented schema (tests/helpers/user_data.py) builds all nine tasks, says in
its stats what it could not derive, and trains one CAVPref step (issue 41)."""

from __future__ import annotations

import json

import pytest
import yaml

from cavpref.data import ALL_TASKS, TASKS
from tests.helpers import trainer_fixtures as F
from tests.helpers import user_data

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from cavpref.data_prep.build import PrepConfig, build

    root = tmp_path_factory.mktemp("user")
    jsonl = user_data.write_user_folder(root / "mine")
    out = root / "prep"
    config = PrepConfig(
        output_dir=str(out),
        custom=[str(jsonl)],
        test_fraction=0.0,
        formats=["arrow", "parquet"],
        progress=False,
    )
    return {"root": root, "media": root / "mine", "out": out, "stats": build(config), "config": config}


def test_all_nine_tasks_come_from_the_users_jsonl(built):
    from cavpref.data_prep.tasks.schema import load_outputs

    stats = built["stats"]
    assert stats["records_read"] == len(user_data.lines()) and stats["records_reconcile"]
    assert stats["excluded_single_modality"] == {"custom: audio-only question": len(user_data.INSTRUMENTS)}
    for task in TASKS:
        assert stats["tasks"][task]["items"] > 0 and stats["tasks"][task]["reconcile"], task
    items, prefs = load_outputs(built["out"])
    by_task = {}
    for p in prefs["train"]:
        by_task.setdefault(p.task, []).append(p)
    assert {p.source for t in ("COT-Stitch", "COT-Swap", "CAT") for p in by_task[t]} == {"custom_clips"}
    assert {p.source for t in ("MCIT", "MVT", "MAT") for p in by_task[t]} == {"custom"}
    # the separate audio file of the last clip is what its questions hear (and what MVT keeps)
    wav = f"audio/q{len(user_data.INSTRUMENTS) - 1}.wav"
    assert any(wav in p.media and 'video":null' in p.media for p in by_task["MVT"])
    assert {i.category for i in items["train"] if i.task == "MCIT"} == {"Existential", "Count"}


def test_stats_say_what_could_not_be_derived(built):
    custom = built["stats"]["custom"]
    n = len(user_data.INSTRUMENTS)
    assert custom["questions"] == 2 * n and custom["clip_lines"] == len(user_data.EVENTS)
    assert custom["category_from"] == {"given": n, "prefix rule": n}
    assert custom["datasets"] == {"(none)": len(user_data.EVENTS), "my_lab": 2 * n}
    assert custom["t1_t2"] == "not derived"
    assert custom["t3_sizes"]["Count"] == 3 and custom["t3_sizes"]["Existential"] == n
    said = " ".join(custom["not_derived"])
    assert "no audioset_ontology" in said and "{'Count': 3}" in said
    assert json.loads((built["out"] / "stats.json").read_text())["custom"] == custom


def test_the_dataset_card_says_what_was_built(built):
    import pyarrow.parquet as pq
    from huggingface_hub import DatasetCard

    out = built["out"]
    card = DatasetCard.load(out / "README.md")
    assert {"cavpref", "avtrustbench", "dpo"} <= set(card.data.tags)
    text = card.text
    assert "| MVT | Modality-specific dependency | (1, 0) | (1, 0) | 20 | 10 | 0 |" in text
    assert "| COT-Swap | Compositional reasoning | (1, 0) | (1, 1) |" in text  # both switch tables
    assert "| excluded_single_modality: custom: audio-only question | 5 |" in text
    assert "no audioset_ontology" in text  # what could not be derived
    assert json.loads((out / "manifest.json").read_text())["fingerprint"] in text
    # the hub's configs metadata (what load_dataset(repo, name) reads) names the folder's real files
    configs = {c["config_name"]: c["data_files"] for c in card.data.configs}
    assert set(configs) == {"preferences", *(f"benchmark-{t}" for t in ALL_TASKS)}  # the nine + CLEAN
    table = pq.read_table(out / configs["preferences"][0]["path"])
    assert table.num_rows == built["stats"]["preferences"]["train"]


def test_one_cavpref_step_trains_on_the_users_tasks(built, tmp_path):
    from cavpref.train import main

    prefs = built["out"] / "preferences"
    recipe = {
        "method": "cavpref",
        "beta_y": 0.1,
        "beta_v": 0.1,
        "beta_a": 0.1,  # no scores: fixed βs
        "train_dataset": str(prefs),
        "media_root": str(built["media"]),
        "output_dir": str(tmp_path / "run"),
        "per_device_train_batch_size": 9,
        "max_steps": 1,
        "logging_steps": 1,
        "save_strategy": "no",
        "bf16": False,
        "use_cpu": True,
        "report_to": "none",
        "disable_tqdm": True,
        "sampler": "mixed",
        "dataloader_num_workers": 0,
        "activation_checkpointing": False,
        "seed": 0,
        "model_name_or_path": str(F.tiny_model(tmp_path / "model")),
        "dtype": "float32",
        "lora_r": 0,
        "num_frames": 2,
    }
    (tmp_path / "r.yaml").write_text(yaml.safe_dump(recipe))
    assert main([str(tmp_path / "r.yaml")]) == 0
    logs = [json.loads(x) for x in (tmp_path / "run" / "logs.jsonl").read_text().splitlines()]
    assert any("loss" in rec and rec["loss"] > 0 for rec in logs)
