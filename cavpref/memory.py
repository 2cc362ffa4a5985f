"""Per-GPU memory estimate for a training run: the arithmetic behind ``cavpref check`` (pure, no torch).

Everything here is bytes from counts, so a user can see *why* a recipe does or does not fit before renting GPUs.
The formulas (also in docs/training.md, "Before you rent GPUs"):

Model states (Rajbhandari et al. 2020, ZeRO, Sec. 3 — Ψ parameters, T of them trainable, N_d GPUs):

- DDP / one GPU: weights Ψ·w, gradients T·w, AdamW's two moments 2·T·w (torch keeps them in the parameter
  dtype ``w``), plus DDP's gradient buckets T·w (``gradient_as_bucket_view`` is off in the HF Trainer).
- DeepSpeed, mixed precision (bf16 / fp16 weights ``w`` = 2): fp32 master weights + two fp32 moments = 12·T bytes.
  ZeRO-2: weights Ψ·w replicated, gradients T·w / N_d, optimizer 12·T / N_d. ZeRO-3: all three / N_d.
- FSDP2 (full shard; accelerate keeps the sharded parameters in fp32 when mixed precision is on): weights Ψ·4 / N_d,
  gradients T·4 / N_d, moments 8·T / N_d, plus one unsharded layer being all-gathered in ``w`` (the largest unit).
- A separate frozen reference model adds Ψ·w (sharded / N_d under ZeRO-3 and FSDP).

Saved activations per token of the language model (what autograd keeps for the backward; ``b`` bytes per
activation, f = 4 for RMSNorm's fp32 upcast, h hidden, i intermediate, kv = key/value width, n_h heads, r LoRA rank).
Counted from Qwen2-style decoder layers (the Qwen2.5-Omni thinker's) and checked against
``torch.autograd.graph.saved_tensors_hooks`` in scripts/bench_memory.py:

- full fine-tuning:  2·(f·h + f + 2·b·h)  +  b·(2h + 2kv) + f·n_h  +  4·b·i
  (two RMSNorms: fp32 input, fp32 rsqrt, normalised output and the projections' flattened input; attention:
  rotated q and k, v, output, fp32 log-sum-exp; MLP: gate, silu(gate), up, their product)
- LoRA (frozen base):  2·(f·h + f)  +  b·(2h + 2kv) + f·n_h  +  3·b·i  +  Σ_adapted [2·a·d_in + a·r]
  (frozen linears and norm weights save no inputs; each adapted linear computes in the adapter dtype, a = 4:
  PEFT keeps adapters in fp32, and saves the dropout mask and lora_A's input, both d_in wide, and lora_A's
  output; without dropout one d_in copy)
- with activation checkpointing: b·h per layer (the layer input) plus one layer's saved set (recomputed in the
  backward) — the standard non-reentrant checkpoint per decoder layer.
- output head, per response token: 4·V (fp32 log-softmax of the picked logits; prompt positions never reach it).

Encoders frozen (the recipes' default) keep no activations: their forward is transient. Reference forwards and
the exact robust normaliser's pass are no-grad: transient too. Transient buffers (all-gathers, attention
workspaces, the allocator's fragmentation) are covered by the headroom, not by a formula.
"""

from __future__ import annotations

from dataclasses import dataclass, field

GIB = 1024**3
FP32 = 4
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
STRATEGIES = ("single", "ddp", "zero2", "zero3", "fsdp")


@dataclass(frozen=True)
class Sharding:
    """How model states are laid out: ``strategy`` in STRATEGIES over ``world_size`` GPUs."""

    strategy: str
    world_size: int = 1

    def __post_init__(self):
        if self.strategy not in STRATEGIES:
            raise ValueError(f"Sharding.strategy: {self.strategy!r} is not one of {STRATEGIES}")
        if self.world_size < 1:
            raise ValueError(f"Sharding.world_size must be >= 1, got {self.world_size}")


def sharding_from_accelerate(config: dict, zero_stage: int | None = None) -> Sharding:
    """An accelerate config (the YAML of ``accelerate launch --config_file``) -> Sharding. ``zero_stage``: the
    stage of the DeepSpeed JSON it points at (read by the caller); 1 is treated as 2 for the estimate's
    upper bound on gradients."""
    kind = str(config.get("distributed_type", "NO")).upper()
    world = int(config.get("num_processes", 1) or 1) * max(1, int(config.get("num_machines", 1) or 1))
    if kind == "DEEPSPEED":
        stage = (
            zero_stage if zero_stage is not None else (config.get("deepspeed_config") or {}).get("zero_stage")
        )
        if stage is None:
            raise ValueError("DeepSpeed config without a ZeRO stage (zero_optimization.stage)")
        return Sharding("zero3" if int(stage) >= 3 else "zero2", world)
    if kind == "FSDP":
        return Sharding("fsdp", world)
    if kind in ("MULTI_GPU", "MULTI_CPU", "MULTI_XPU", "MULTI_NPU"):
        return Sharding("ddp", world)
    return Sharding("single", 1)


@dataclass(frozen=True)
class DecoderShape:
    """What the activation formula needs of a decoder-only language model."""

    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    vocab: int
    head_dim: int | None = None

    @property
    def kv_dim(self) -> int:
        return self.kv_heads * (self.head_dim or self.hidden // self.heads)


@dataclass(frozen=True)
class LoraShape:
    """LoRA on the decoder: rank, dropout on, and the input width of each adapted linear of one layer."""

    rank: int
    dropout: bool
    input_dims: tuple[int, ...]
    adapter_bytes: int = 4  # PEFT keeps adapter weights in fp32 (autocast_adapter_dtype) and computes there


def lora_input_dims(shape: DecoderShape, targets: list[str]) -> tuple[int, ...]:
    """Input width of each Qwen2 decoder linear named in ``targets`` (down_proj reads the intermediate)."""
    dims = {"q_proj": shape.hidden, "k_proj": shape.hidden, "v_proj": shape.hidden, "o_proj": shape.hidden}
    dims.update(gate_proj=shape.hidden, up_proj=shape.hidden, down_proj=shape.intermediate)
    return tuple(dims[t] for t in targets if t in dims)


def layer_saved_bytes(shape: DecoderShape, act_bytes: int, lora: LoraShape | None = None) -> int:
    """Saved-tensor bytes per token of one decoder layer in training (see the module docstring)."""
    h, i, kv, b = shape.hidden, shape.intermediate, shape.kv_dim, act_bytes
    attention = b * (2 * h + 2 * kv) + FP32 * shape.heads
    if lora is None:
        return 2 * (FP32 * h + FP32 + 2 * b * h) + attention + 4 * b * i
    a, copies = lora.adapter_bytes, 2 if lora.dropout else 1
    adapters = sum(copies * a * d + a * lora.rank for d in lora.input_dims)
    return 2 * (FP32 * h + FP32) + attention + 3 * b * i + adapters


def head_saved_bytes(shape: DecoderShape) -> int:
    """Per response token: the fp32 log-softmax over the vocabulary."""
    return FP32 * shape.vocab


def activation_bytes(
    shape: DecoderShape,
    tokens: int,
    response_tokens: int,
    act_bytes: int,
    checkpointing: bool,
    lora: LoraShape | None = None,
) -> int:
    """Saved activations of one micro-batch: ``tokens`` through the decoder, ``response_tokens`` scored."""
    per_layer = layer_saved_bytes(shape, act_bytes, lora)
    if checkpointing:
        body = tokens * (shape.layers * shape.hidden * act_bytes + per_layer)
    else:
        body = tokens * shape.layers * per_layer
    return body + response_tokens * head_saved_bytes(shape)


@dataclass(frozen=True)
class StateBytes:
    weights: int
    gradients: int
    optimizer: int
    buffers: int = 0  # DDP gradient buckets / FSDP's all-gathered unit

    @property
    def total(self) -> int:
        return self.weights + self.gradients + self.optimizer + self.buffers


def state_bytes(
    total_params: int,
    trainable_params: int,
    weight_bytes: int,
    sharding: Sharding,
    largest_unit_params: int = 0,
) -> StateBytes:
    """Weights, gradients and AdamW states per GPU (see the module docstring for the formulas)."""
    psi, t, w, n = total_params, trainable_params, weight_bytes, sharding.world_size
    s = sharding.strategy
    if s in ("single", "ddp"):
        return StateBytes(psi * w, t * w, 2 * t * w, t * w if s == "ddp" else 0)
    if s == "zero2":
        return StateBytes(psi * w, t * w // n, 12 * t // n)
    if s == "zero3":
        return StateBytes(psi * w // n, t * w // n, 12 * t // n)
    return StateBytes(psi * FP32 // n, t * FP32 // n, 2 * FP32 * t // n, largest_unit_params * w)


def reference_bytes(total_params: int, weight_bytes: int, sharding: Sharding) -> int:
    """A separate frozen reference model's weights per GPU (sharded under ZeRO-3 / FSDP)."""
    sharded = sharding.strategy in ("zero3", "fsdp")
    return total_params * weight_bytes // (sharding.world_size if sharded else 1)


@dataclass
class Estimate:
    """Per-GPU bytes by component, and the verdict against a GPU size."""

    parts: dict[str, int] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def verdict(self, gpu_bytes: int, headroom: float = 0.1) -> str:
        """``fits`` when the estimate leaves ``headroom`` (fraction of the GPU) free for transient buffers."""
        budget = gpu_bytes * (1 - headroom)
        return "fits" if self.total <= budget else "does not fit"


def estimate(
    *,
    total_params: int,
    trainable_params: int,
    weight_bytes: int,
    sharding: Sharding,
    reference: bool,
    shape: DecoderShape,
    tokens: int,
    response_tokens: int,
    checkpointing: bool,
    lora: LoraShape | None = None,
    largest_unit_params: int = 0,
) -> Estimate:
    """One micro-batch's peak: model states + reference weights + saved activations of the policy forward."""
    states = state_bytes(total_params, trainable_params, weight_bytes, sharding, largest_unit_params)
    return Estimate(
        {
            "weights": states.weights,
            "gradients": states.gradients,
            "optimizer": states.optimizer,
            "buffers": states.buffers,
            "reference": reference_bytes(total_params, weight_bytes, sharding) if reference else 0,
            "activations": activation_bytes(
                shape, tokens, response_tokens, weight_bytes, checkpointing, lora
            ),
        }
    )
