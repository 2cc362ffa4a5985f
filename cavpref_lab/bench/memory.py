"""Saved-tensor bytes per token per decoder layer: cavpref.memory's formula vs what autograd keeps (CPU).

Builds a Qwen2.5-Omni thinker with 1 and 2 decoder layers (encoders 1 tiny block; they are frozen in the recipes
and keep no activations), runs a training forward under ``torch.autograd.graph.saved_tensors_hooks`` and counts
the bytes of the distinct storages saved (parameters excluded); the 2-layer minus 1-layer difference is one
layer's bytes. Full fine-tuning and LoRA (the recipes' r=16, dropout 0.05, 7 projections).

    OMP_NUM_THREADS=1 python scripts/bench_memory.py --width real --dtype bfloat16 --tokens 64
    OMP_NUM_THREADS=1 python scripts/bench_memory.py --width tiny --dtype float32 --tokens 64
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

import torch

from cavpref.memory import DTYPE_BYTES, DecoderShape, LoraShape, layer_saved_bytes, lora_input_dims
from cavpref.models.config import AVModelArguments
from cavpref.models.prepare import prepare_model
from cavpref.models.qwen_omni import QwenOmniModelIO

WIDTHS = {"real": (3584, 18944, 28, 4, 152064), "tiny": (32, 64, 2, 1, 1000)}


def build(width: str, layers: int):
    from transformers import Qwen2_5OmniThinkerConfig, Qwen2_5OmniThinkerForConditionalGeneration

    h, i, nh, kv, vocab = WIDTHS[width]
    half = h // nh // 2
    t = max(1, half // 4)
    section = [t, (half - t) // 2, half - t - (half - t) // 2]
    cfg = Qwen2_5OmniThinkerConfig(
        vision_config={
            "hidden_size": 32,
            "intermediate_size": 64,
            "depth": 1,
            "num_heads": 2,
            "out_hidden_size": h,
            "fullatt_block_indexes": [0],
        },
        audio_config={
            "d_model": 32,
            "encoder_layers": 1,
            "encoder_attention_heads": 2,
            "encoder_ffn_dim": 64,
            "output_dim": h,
        },
        text_config={
            "hidden_size": h,
            "intermediate_size": i,
            "num_attention_heads": nh,
            "num_key_value_heads": kv,
            "num_hidden_layers": layers,
            "vocab_size": vocab,
            "tie_word_embeddings": False,
            "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": section},
        },
        vision_start_token_id=vocab - 2,
    )
    cfg._attn_implementation = "sdpa"
    return Qwen2_5OmniThinkerForConditionalGeneration(cfg), DecoderShape(h, i, layers, nh, kv, vocab)


def saved_bytes(model, tokens: int) -> int:
    params = {p.data_ptr() for p in model.parameters()}
    seen: dict[int, int] = {}

    def pack(t):
        if t.data_ptr() not in params:
            seen[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    ids = torch.randint(0, 500, (1, tokens))
    model.train()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=False)
    return sum(seen.values())


@dataclass
class BenchMemoryArguments:
    width: str = field(
        default="tiny", metadata={"help": "tiny (h 32) or real (h 3584, i 18944, 28 / 4 heads)"}
    )
    dtype: str = field(default="float32", metadata={"help": "float32 | bfloat16 | float16"})
    tokens: int = field(default=64, metadata={"help": "sequence length of the measured forward"})
    modes: str = field(default="full,lora", metadata={"help": "comma-separated: full, lora"})


def main(argv: list[str] | None = None) -> None:
    from cavpref.parsing import parse_args

    (args,) = parse_args(
        [BenchMemoryArguments], sys.argv[1:] if argv is None else argv, prog="bench_memory.py"
    )
    torch.manual_seed(0)
    b = DTYPE_BYTES[args.dtype]
    print(f"width={args.width} dtype={args.dtype} tokens={args.tokens}")
    print(f"{'mode':<6} {'estimate B/tok/layer':>21} {'measured':>10} {'ratio':>6}")
    for mode in args.modes.split(","):
        measured = []
        for layers in (1, 2):
            model, shape = build(args.width, layers)
            model = model.to(getattr(torch, args.dtype))
            margs = AVModelArguments(model_name_or_path="-", lora_r=16 if mode == "lora" else 0)
            model = prepare_model(model, margs, QwenOmniModelIO)
            measured.append(saved_bytes(model, args.tokens))
            del model
        per_layer = (measured[1] - measured[0]) / args.tokens
        lora = (
            LoraShape(
                16, True, lora_input_dims(shape, AVModelArguments(model_name_or_path="-").lora_target_modules)
            )
            if mode == "lora"
            else None
        )
        est = layer_saved_bytes(shape, b, lora)
        print(f"{mode:<6} {est:>21,} {per_layer:>10,.0f} {est / per_layer:>6.3f}")


if __name__ == "__main__":
    main()
