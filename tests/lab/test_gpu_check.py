"""``cavpref_lab.gpu_check`` on CPU at tiny widths in float32 (the GPU run's code path, so it cannot rot): every
section runs, the JSON carries what the docs' tables are made from, the float32 exactness holds; a broken block
mask makes the check fail; a spent time budget skips sections and says so."""

from __future__ import annotations

import json
import math

import pytest

from cavpref_lab import gpu_check

pytestmark = pytest.mark.usefixtures("one_thread")

SMALL = [
    "--device", "cpu", "--width", "tiny", "--dtypes", "float32", "--memory_modes", "lora", "--rounds", "1", "--warmup", "0",
    "--frames", "2", "--frame_size", "56", "--audio_seconds", "1", "--height", "56", "--width_px", "56",
    "--seconds", "2",
]  # fmt: skip
SECTIONS = ["exactness", "attention", "memory", "throughput", "real_row"]


def _run(out, *extra):
    rc = gpu_check.main([*SMALL, "--out", str(out), *extra])
    return rc, json.loads((out / "gpu_check.json").read_text()), (out / "gpu_check.md").read_text()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return _run(tmp_path_factory.mktemp("gpu_check"))


def test_every_section_runs_and_the_float32_step_is_exact(report):
    rc, data, _ = report
    assert rc == 0 and data["ok"], {k: v.get("error") for k, v in data["sections"].items()}
    assert list(data["sections"]) == SECTIONS and {s["status"] for s in data["sections"].values()} == {"ok"}
    assert data["environment"]["device"] == "cpu" and data["environment"]["trl"]
    (row,) = data["sections"]["exactness"]["rows"]
    assert row["dtype"] == "float32" and row["passed"] and row["parameters_finite_after_step"]
    apart = row["shared_vs_full"]
    assert max(apart[k] for k in ("policy", "reference", "loss", "gradients")) <= 1e-5
    # the 9-task mix under CAVPref: 18 rows y_w / y_l + 10 anchor rows, packed by prefix
    assert row["rows"] == 28 and row["lm_tokens_shared"] < row["lm_tokens_full"]
    assert row["parameters_with_gradient"] > 4  # full fine-tuning: embedding, layer, norm, head


def test_attention_names_each_implementation(report):
    rows = report[1]["sections"]["attention"]["rows"]
    by = {(r["requested"], r.get("layout")): r for r in rows}
    sdpa, eager = by["sdpa", "shared prefix"], by["eager", "shared prefix"]
    assert sdpa["kernel"] == "sdpa" and sdpa["shared_prefix_ran"] and sdpa["fallback_reason"] is None
    assert any("scaled_dot_product" in op for op in sdpa["ops"]["language_model"])
    assert eager["shared_prefix_ran"] and not any(
        "scaled_dot_product" in op for op in eager["ops"]["language_model"]
    )
    assert not by["sdpa", "full rows"]["shared_prefix_ran"]
    assert all(r["logps_vs_sdpa_full_rows"] <= 1e-5 for r in rows if r["loaded"])
    flash = by["flash_attention_2", None]  # flash-attn is not installed here (nor on the GPU image)
    assert not flash["loaded"] and "FlashAttention2" in flash["error"]


def test_memory_compares_each_depth_with_the_estimate(report):
    mem = report[1]["sections"]["memory"]
    assert [(r["mode"], r["layers"]) for r in mem["runs"]] == [("lora", 1), ("lora", 2)]
    for r in mem["runs"]:
        assert r["estimate_total"] == sum(r["estimate"].values()) and r["saved_bytes"] > 0
        assert r["peak_bytes"] is None  # CPU: no allocator peak; the saved-tensor count stands in
        assert r["positions"] >= r["lm_tokens"]  # padding of the packed prefixes
    (layer,) = mem["per_layer"]
    assert layer["saved_vs_formula"] == pytest.approx(
        layer["saved_per_position"] / layer["formula_per_position"]
    )
    runs = mem["runs"]
    assert (
        layer["saved_per_position"]
        == (runs[1]["saved_bytes"] - runs[0]["saved_bytes"]) / runs[1]["positions"]
    )


def test_throughput_ratios_sit_next_to_the_token_ideal(report):
    rows = report[1]["sections"]["throughput"]["rows"]
    assert [r["config"] for r in rows] == [
        "DPO full rows",
        "DPO shared",
        "CAVPref full rows",
        "CAVPref shared",
    ]
    base = rows[0]
    assert base["speed_vs_dpo_full"] == 1.0 and base["token_ideal"] == 1.0
    for r in rows:
        assert r["token_ideal"] == base["lm_tokens"] / r["lm_tokens"]
        assert r["lm_tokens_per_s"] == pytest.approx(r["lm_tokens"] / r["step_s_best"])
    assert rows[1]["lm_tokens"] < rows[0]["lm_tokens"] and rows[1]["prefixes"] == rows[0]["rows"] // 2


def test_real_row_tokens_match_check_and_qwen_formulas(report):
    row = report[1]["sections"]["real_row"]
    assert row["predicted"] == row["measured"] and row["rows"] == 2  # MCIT: y_w, y_l
    # 56x56 frames: 4x4 patches of 14 px, merged 2x2 -> 4 tokens per frame pair; 8 frames -> 4 pairs
    assert row["video_grid_thw"] == [[4, 4, 4]] and row["measured"]["video"] == math.prod([4, 4, 4]) / 4
    assert row["measured"]["audio"] == 25 * 2  # 25 audio tokens per second (Qwen2.5-Omni), 2-s clip


def test_markdown_has_every_table(report):
    md = report[2]
    for title in ("Exactness", "Attention implementations", "Memory", "Throughput", "Real processor row"):
        assert f"## {title}" in md
    assert "| float32 |" in md and "| DPO shared |" in md and "| predicted |" in md


def test_a_broken_block_mask_fails_the_check(tmp_path, monkeypatch):
    """Responses that see each other (a plain causal mask over the packed sequence): the exactness fails."""
    from cavpref.models import chat
    from cavpref.models.shared_prefix import block_mask

    monkeypatch.setattr(chat, "block_mask", lambda seg, valid: block_mask(seg.clamp(max=0) * 0, valid))
    rc, data, _ = _run(tmp_path, "--sections", "exactness", "--batch", "2")
    ex = data["sections"]["exactness"]
    assert rc == 1 and ex["status"] == "failed" and not ex["rows"][0]["passed"]
    assert ex["rows"][0]["shared_vs_full"]["policy"] > 1e-5


def test_a_spent_budget_skips_sections_and_says_so(tmp_path):
    rc, data, md = _run(tmp_path, "--budget_s", "-1")
    assert rc == 1 and not data["ok"]
    assert {s["status"] for s in data["sections"].values()} == {"skipped"}
    assert "budget" in md


def test_out_comes_from_the_argument_or_the_OUT_variable(monkeypatch):
    monkeypatch.delenv("OUT", raising=False)
    with pytest.raises(SystemExit, match="--out"):
        gpu_check.main(["--device", "cpu", "--sections", "exactness"])


def test_the_carried_wheels_are_the_versions_pyproject_pins():
    """The GPU run installs ``scripts/gpu_wheels.sh``'s wheels over an older image: every package pyproject
    pins to a minor release (the trainer's private TRL / Trainer hooks) must be carried at a version inside the
    pin, and every carried package pyproject names must satisfy its requirement, so the GPU check runs the
    versions the suite runs."""
    import re
    from pathlib import Path

    import tomllib
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    root = Path(__file__).resolve().parents[2]
    script_text = (root / "scripts" / "gpu_wheels.sh").read_text()
    carried = {
        canonicalize_name(name): version
        for name, version in re.findall(
            r"([A-Za-z0-9_.-]+)==([0-9][^\s)]*)", script_text.split("wheels=(")[1]
        )
    }
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    reqs = {canonicalize_name(r.name): r for r in map(Requirement, deps)}
    pinned = {name for name, r in reqs.items() if any(s.operator == "<" for s in r.specifier)}
    assert {"transformers", "trl", "peft", "accelerate"} <= pinned
    assert pinned <= set(carried), f"pinned but not carried: {sorted(pinned - set(carried))}"
    wrong = {
        n: (v, str(reqs[n].specifier)) for n, v in carried.items() if n in reqs and v not in reqs[n].specifier
    }
    assert not wrong, f"carried outside pyproject's requirement: {wrong}"
    assert "huggingface-hub" in carried  # transformers 5.25 needs huggingface_hub >= 2.4 (the image: 1.33)
