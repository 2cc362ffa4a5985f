"""A built-in task is one unit: ``data_prep/tasks/<task>.py`` (its generator) and ``<task>.yaml`` (its facts,
templates included), issue 52 part 3. The module's ``TaskSpec`` is the file's; the core's facts are the same
file's; prep's code fingerprint covers the files; and prep writes the rows it wrote when the facts were Python
(the fingerprints below were computed at bca38a4, before the files existed)."""

from __future__ import annotations

import hashlib
import importlib
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from cavpref import task_registry
from cavpref.data_prep.build.fingerprint import code_files
from cavpref.data_prep.tasks import GENERATORS, TASK_SPECS, generate_all
from cavpref.data_prep.tasks.spec import spec_from_file
from tests.helpers.task_records import avqa, make_tables, music

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "data_prep" / "tasks"
pytestmark = pytest.mark.usefixtures("one_thread")


def test_each_builtin_task_is_a_module_and_a_task_file_beside_it():
    files = {p.stem for p in TASKS.glob("*.yaml")}
    modules = {
        p.stem
        for p in TASKS.glob("[!_]*.py")
        if hasattr(m := importlib.import_module(f"cavpref.data_prep.tasks.{p.stem}"), "TASK")
        and hasattr(m, "generate")
    }
    assert files == modules and len(files) == len(task_registry.BUILTIN_TASKS)
    for stem in files:
        module = importlib.import_module(f"cavpref.data_prep.tasks.{stem}")
        spec = spec_from_file(TASKS / f"{stem}.yaml")
        assert module.SPEC == spec == TASK_SPECS[module.TASK] and module.TASK == spec.name
        assert GENERATORS[spec.name] is module.generate
        assert spec.info() == task_registry.task_info(spec.name)  # the core's facts are the file's


def test_spec_from_file_names_the_file_and_the_key(tmp_path):
    path = tmp_path / "mat.yaml"
    text = (TASKS / "mat.yaml").read_text()

    def bad(old, new, message):
        assert old in text, old
        path.write_text(text.replace(old, new, 1))
        with pytest.raises(ValueError, match=message):
            spec_from_file(path)

    bad("sources:", "source:", r"mat.yaml: unknown key\(s\) \['source'\]")
    bad(
        "    instruction: 'If the correct",
        "    instructions: 'If the correct",
        r"mat.yaml: templates: each is",
    )
    bad("abstention: 'The audio", "abstention_: 'The audio", r"mat.yaml: unknown key\(s\) \['abstention_'\]")
    bad("sources: [music_avqa, custom]\n", "", r"mat.yaml: .*sources")  # a required TaskSpec field
    path.write_text(text)
    assert spec_from_file(tmp_path / "mat.py") == TASK_SPECS["MAT"]  # a module's __file__ names its file


def test_the_prep_code_fingerprint_covers_the_task_files():
    covered = set(code_files())
    assert {p.resolve() for p in TASKS.glob("*.yaml")} <= {p.resolve() for p in covered}


def digest(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


# computed at bca38a4 (the facts in Python, the hand-written core table) with this file's code
BEFORE = {
    "items": "1915c71d2467f50e9c6014a1c846e36d1163b18ac3fa5c832b612cdc18b1fafc",
    "prefs": "ccfce440afd69791bbaf6fbadc5669c8e690bb5542bea94a53885241aa36e7af",
    "counts": {"test": 12, "train": 664, "prefs_test": 12, "prefs_train": 664},
    "manifest_tasks": "f5e45bdb323ea40b22236a5d3e8e6656a0a26079dcd62c829ed90a841d428793",
    "hand": "51d354b269c8484a18bfe66a09bdbbf9afa2bd57713a37c6d30b274b25054b9f",
}


def test_prep_writes_the_rows_it_wrote_before_the_task_files(small_world, tmp_path):
    """Every row of a small world's prep (all ten tasks, both settings, both splits), the manifest's task and
    switch tables (their order too), and the hand-made records' rows of every task: equal to bca38a4's."""
    from cavpref.data_prep.build import PrepConfig, build
    from cavpref.data_prep.tasks.schema import load_outputs

    world = tmp_path / "world"
    shutil.copytree(small_world, world)
    out = tmp_path / "prep"
    build(
        PrepConfig(
            output_dir=str(out), world=str(world), seed=5, split_seed=5, formats=["jsonl"], progress=False
        )
    )
    items, prefs = load_outputs(out)
    manifest = json.loads((out / "manifest.json").read_text())
    records = [
        music(0, "00000001", "Which instrument sounds first?", "piano", "Temporal"),
        music(1, "00000001", "How many guitars are playing?", "two", "Count"),
        music(2, "00000002", "Is the violin louder than the drum?", "yes", "Comparative"),
        avqa(
            0, "aaaaaaaaaaa_000010", "What animal is making the sound?", "dog", ["dog", "cat", "cow", "car"]
        ),
    ]
    hand_items, hand_prefs, skips = generate_all(
        records, make_tables(), seed=0, tasks=list(task_registry.task_names())
    )
    now = {
        "items": digest({s: [i.to_row() for i in v] for s, v in items.items()}),
        "prefs": digest({s: [p.to_row() for p in v] for s, v in prefs.items()}),
        "counts": {s: len(v) for s, v in items.items()} | {f"prefs_{s}": len(v) for s, v in prefs.items()},
        "manifest_tasks": hashlib.sha256(json.dumps([manifest["tasks"], manifest["switch_table"]]).encode()).hexdigest(),
        "hand": digest([[i.to_row() for i in hand_items], [p.to_row() for p in hand_prefs], {k: dict(v) for k, v in skips.items()}]),
    }  # fmt: skip
    assert now == BEFORE
    assert (
        set(Counter(i.task for s in items.values() for i in s)) == set(manifest["tasks"]) == set(TASK_SPECS)
    )
