"""The tiny recipes that add terms to a method (``loss_type`` in the YAML) train as shipped: ``cavpref train`` on
the shared inputs, one step, every term of the recipe logged with its hand-computed value at step 0."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from cavpref.train import main as train_main

ROOT = Path(__file__).resolve().parents[2]
COMBINED = sorted(
    p for p in (ROOT / "recipes" / "tiny").glob("*.yaml") if "loss_type" in yaml.safe_load(p.read_text())
)
pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.parametrize("recipe", COMBINED, ids=lambda p: p.stem)
def test_a_combined_tiny_recipe_trains_and_logs_every_term(recipe, fx, tmp_path):
    out = tmp_path / "run"
    argv = [str(recipe), "--train_dataset", str(fx["prefs"]), "--media_root", str(fx["media"])]
    argv += ["--model_name_or_path", str(fx["model"]), "--output_dir", str(out), "--max_steps", "1"]
    argv += [
        "--save_strategy",
        "no",
        "--beta_y",
        "0.1",
        "--beta_v",
        "0.1",
        "--beta_a",
        "0.1",
    ]  # unscored rows
    assert train_main(argv) == 0
    log = json.loads((out / "logs.jsonl").read_text().splitlines()[0])
    terms = yaml.safe_load(recipe.read_text())["loss_type"]
    assert {f"term/{t}" for t in terms} <= set(log), sorted(log)
    # step 0: the policy is the reference, so every chosen reward r_w is 0 and mDPO's anchor is -log σ(0 - δ)
    delta = yaml.safe_load(recipe.read_text()).get("ancpo_delta", 0.0)
    for t in (t for t in terms if t.startswith("ancpo_")):
        assert log[f"term/{t}"] == pytest.approx(math.log1p(math.exp(delta)), abs=1e-4), t
