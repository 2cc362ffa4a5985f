"""cavpref.memory: the per-GPU estimate of `cavpref check`, against hand-computed numbers."""

from __future__ import annotations

import pytest

from cavpref.memory import (
    DecoderShape,
    LoraShape,
    Sharding,
    activation_bytes,
    estimate,
    layer_saved_bytes,
    lora_input_dims,
    sharding_from_accelerate,
    state_bytes,
)

QWEN7B = DecoderShape(hidden=3584, intermediate=18944, layers=28, heads=28, kv_heads=4, vocab=152064)


def test_layer_bytes_full_finetuning_by_hand():
    # fp32: 8h + 2kv + 4i + 2 + n_h floats = 28672 + 1024 + 75776 + 30 = 105502 floats (measured exactly with
    # saved_tensors_hooks on a real-width layer, scripts/bench_memory.py)
    assert layer_saved_bytes(QWEN7B, 4) == 4 * 105502
    # bf16: 2(4h + 4 + 4h) + 2(2h + 2kv) + 4*28 + 8i = 57352 + 16384 + 112 + 151552
    assert layer_saved_bytes(QWEN7B, 2) == 57352 + 16384 + 112 + 151552


def test_layer_bytes_lora_by_hand():
    dims = lora_input_dims(
        QWEN7B, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )
    assert dims == (3584,) * 6 + (18944,)
    lora = LoraShape(rank=16, dropout=True, input_dims=dims)
    base = 2 * (4 * 3584 + 4) + 2 * (2 * 3584 + 2 * 512) + 4 * 28 + 3 * 2 * 18944
    adapters = (
        2 * 4 * (6 * 3584 + 18944) + 7 * 4 * 16
    )  # fp32 adapters: dropout mask + lora_A input, lora_A out
    assert (
        layer_saved_bytes(QWEN7B, 2, lora) == base + adapters == 482_872
    )  # measured, scripts/bench_memory.py


def test_checkpointing_keeps_layer_inputs_plus_one_layer():
    per = layer_saved_bytes(QWEN7B, 2)
    assert activation_bytes(QWEN7B, 10, 0, 2, False) == 10 * 28 * per
    assert activation_bytes(QWEN7B, 10, 0, 2, True) == 10 * (28 * 3584 * 2 + per)
    assert (
        activation_bytes(QWEN7B, 10, 3, 2, True) - activation_bytes(QWEN7B, 10, 0, 2, True) == 3 * 4 * 152064
    )


def test_state_bytes_zero_paper_formulas():
    psi, t = 1000, 100
    assert state_bytes(psi, t, 2, Sharding("ddp", 8)).total == psi * 2 + t * 2 + 4 * t + 2 * t
    assert state_bytes(psi, t, 2, Sharding("single")).total == psi * 2 + 6 * t
    z2 = state_bytes(psi, t, 2, Sharding("zero2", 4))
    assert (z2.weights, z2.gradients, z2.optimizer) == (2000, 50, 300)
    z3 = state_bytes(psi, t, 2, Sharding("zero3", 4))
    assert (z3.weights, z3.gradients, z3.optimizer) == (500, 50, 300)
    fs = state_bytes(psi, t, 2, Sharding("fsdp", 4), largest_unit_params=10)
    assert (fs.weights, fs.gradients, fs.optimizer, fs.buffers) == (1000, 100, 200, 20)


def test_sharding_from_accelerate_configs():
    assert sharding_from_accelerate({"distributed_type": "MULTI_GPU", "num_processes": 8}) == Sharding(
        "ddp", 8
    )
    assert sharding_from_accelerate({"distributed_type": "DEEPSPEED", "num_processes": 8}, 3) == Sharding(
        "zero3", 8
    )
    assert (
        sharding_from_accelerate({"distributed_type": "DEEPSPEED", "num_processes": 2}, 2).strategy == "zero2"
    )
    assert sharding_from_accelerate({"distributed_type": "FSDP", "num_processes": 8}) == Sharding("fsdp", 8)
    assert sharding_from_accelerate({"distributed_type": "NO"}) == Sharding("single", 1)
    with pytest.raises(ValueError, match="ZeRO stage"):
        sharding_from_accelerate({"distributed_type": "DEEPSPEED"})


def test_estimate_sums_parts_and_verdict():
    est = estimate(
        total_params=1000,
        trainable_params=100,
        weight_bytes=2,
        sharding=Sharding("single"),
        reference=True,
        shape=QWEN7B,
        tokens=0,
        response_tokens=0,
        checkpointing=True,
    )
    assert (
        est.parts["reference"] == 2000 and est.total == 2000 + 600 + 2000
    )  # weights + 6T (grads, 2 moments) + reference
    assert est.verdict(6000, headroom=0.1) == "fits"
    assert est.verdict(6000, headroom=0.25) == "does not fit"
