"""``cavpref check RECIPE.yaml [--accelerate_config X] [--gpu_memory_gb 80]``: a dry run before renting GPUs.

Offline, before any download. Reads the recipe exactly as ``cavpref train`` does (same dataclasses, same
overrides) and checks its paths first (the accelerate config, the model folder, the data and media folders);
builds the model on the meta device (its config from the checkpoint folder, ``--model_config FILE``, or the
published values of a known hub id: ``cavpref.models.published``), applies the recipe's LoRA and counts
parameters; collates a sample of the recipe's rows through the model I/O (real processor arithmetic; for a
published hub id the processor is built offline from the checkpoint's preprocessor values) and prints tokens per
row and per micro-batch, then the per-GPU memory estimate of ``cavpref.memory`` under the accelerate config's
sharding, with a verdict against the GPU size.

Without data on disk (the shipped 7B recipes point at ``data/avtrustbench/...``) the rows are synthetic: one per
task of the recipe (``cavpref.bench.rows``), on clips of ``--estimate_height`` x ``--estimate_width``
pixels, so the token counts are those of the recipe's media budgets (frames resized under
``video_max_pixels``, audio padded to ``audio_max_seconds``); their text is a short question.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from cavpref.parsing import load_yaml

GIB = 1024**3


@dataclass
class CheckArguments:
    """Keys of ``cavpref check`` only (the recipe's keys are ``cavpref train``'s)."""

    accelerate_config: str | None = field(
        default=None,
        metadata={"help": "accelerate config YAML: its sharding and num_processes (None: one GPU)"},
    )
    num_gpus: int | None = field(default=None, metadata={"help": "override the config's num_processes"})
    gpu_memory_gb: float = field(default=80.0, metadata={"help": "memory of one GPU (GiB) for the verdict"})
    headroom: float = field(
        default=0.1, metadata={"help": "fraction of the GPU kept free for transient buffers in the verdict"}
    )
    sample_rows: int = field(default=8, metadata={"help": "dataset rows collated to count tokens"})
    model_config: str | None = field(
        default=None,
        metadata={"help": "config.json to build the model from (when the checkpoint is not on disk)"},
    )
    processor_path: str | None = field(
        default=None,
        metadata={
            "help": "folder with the processor (None: the checkpoint folder; for a published hub id not on "
            "disk, its preprocessor values built offline)"
        },
    )
    estimate_height: int = field(
        default=720,
        metadata={
            "help": "frame height of the synthetic clips when the recipe's train_dataset is not on disk"
        },
    )
    estimate_width: int = field(
        default=1280,
        metadata={
            "help": "frame width of the synthetic clips when the recipe's train_dataset is not on disk"
        },
    )
    estimate_seconds: float | None = field(
        default=None,
        metadata={
            "help": "length of the synthetic clips (None: the recipe's audio_max_seconds, the longest audio a "
            "row can carry, else 30)"
        },
    )


class CheckError(ValueError):
    """A recipe ``cavpref check`` cannot size: a missing path or an unknown model; printed as one line."""


def parse(argv: list[str]):
    import torch

    from cavpref.config import CAVPrefConfig
    from cavpref.models.config import AVModelArguments
    from cavpref.parsing import parse_args
    from cavpref.train import DataArguments, check_recipe

    if not torch.cuda.is_available():  # bf16 recipes are validated against the local device; sizing is not
        argv = [*argv, "--use_cpu", "true"]
    check_recipe(argv)
    return parse_args(
        [CAVPrefConfig, DataArguments, AVModelArguments, CheckArguments], argv, prog="cavpref check"
    )


def model_config(model_args, check):
    """The thinker config: --model_config, the checkpoint folder's config.json, or the published values."""
    from transformers import Qwen2_5OmniConfig, Qwen2_5OmniThinkerConfig

    from cavpref.models.published import PUBLISHED

    path = model_args.model_name_or_path
    if check.model_config:
        with open(check.model_config) as f:
            raw, where = json.load(f), check.model_config
    elif os.path.isfile(os.path.join(path, "config.json")):
        with open(os.path.join(path, "config.json")) as f:
            raw, where = json.load(f), path
    elif path in PUBLISHED:
        raw, where = PUBLISHED[path], f"published config of {path} (cavpref.models.published)"
    else:
        raise CheckError(
            f"model_name_or_path {path!r}: no folder with a config.json and no published config "
            f"(known: {sorted(PUBLISHED)}); pass --model_config config.json"
        )
    if raw.get("model_type") == "qwen2_5_omni":
        return Qwen2_5OmniConfig(**raw).thinker_config, where
    if raw.get("model_type") != "qwen2_5_omni_thinker":
        raise CheckError(
            f"{where}: model_type {raw.get('model_type')!r}: cavpref check sizes the Qwen2.5-Omni thinker"
        )
    return Qwen2_5OmniThinkerConfig(**raw), where


def meta_model(config, model_args):
    """The recipe's model to train, on the meta device (no memory): (model, total, trainable, largest unit)."""
    import torch
    from transformers import Qwen2_5OmniThinkerForConditionalGeneration

    from cavpref.models.prepare import prepare_model
    from cavpref.models.qwen_omni import QwenOmniModelIO

    with torch.device("meta"):
        model = Qwen2_5OmniThinkerForConditionalGeneration(config)
        total = sum(p.numel() for p in model.parameters())
        model = prepare_model(model, model_args, QwenOmniModelIO)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    layer = (
        sum(p.numel() for p in model.get_base_model().model.language_model.layers[0].parameters())
        if hasattr(model, "get_base_model")
        else sum(p.numel() for p in model.model.language_model.layers[0].parameters())
    )
    return model, total, trainable, layer


def processor(model_args, check):
    """(processor, where it came from): the processor folder, the checkpoint folder, or for a published hub id
    the checkpoint's preprocessor values built offline (``real_config.build_qwen_omni_processor``)."""
    from transformers import AutoProcessor

    from cavpref.models.published import PUBLISHED

    path = check.processor_path or model_args.model_name_or_path
    if os.path.isdir(path):
        return AutoProcessor.from_pretrained(path), path
    if path in PUBLISHED:
        return published_processor(), (
            f"published preprocessor of {path}, built offline (text tokens from a local BPE, not the real merges)"
        )
    raise CheckError(
        f"processor_path {path!r}: no such folder and no published processor; pass --processor_path"
    )


@functools.lru_cache(maxsize=1)
def published_processor():
    """Qwen2.5-Omni-7B's processor from its published values (~8 CPU-seconds: the 151,665-id tokenizer); once
    per process."""
    from cavpref.models.real_config import build_qwen_omni_processor

    return build_qwen_omni_processor()


def count_tokens(
    train_args, data_args, model_args, proc, dataset: str, media_root: str, limit: int | None
) -> dict:
    """Collate the first ``limit`` rows of ``dataset`` through the recipe's model I/O and collator; count
    tokens."""
    from cavpref.collator import CAVPrefCollator
    from cavpref.models.qwen_omni import QwenOmniModelIO
    from cavpref.train import load_preferences

    io = QwenOmniModelIO(proc, model=None, **QwenOmniModelIO.model_io_kwargs(model_args))
    rows = load_preferences(dataset, data_args.train_split, limit, data_args.train_tasks)
    calibrated = (
        [c for c, b in train_args.fixed_betas.items() if b is None] if train_args.method != "sft" else []
    )
    collator = CAVPrefCollator(
        io,
        train_args.switches(),
        train_args.row_method,
        calibrated,
        media_root=media_root,
        frames=model_args.frame_policy(),
    )
    batch = collator([rows[i] for i in range(len(rows))])["model_inputs"]
    return batch_tokens(io, batch, len(rows), model_args.shared_prefix)


def batch_tokens(io, batch: dict, n_samples: int, shared_prefix: bool) -> dict:
    """Tokens of one collated batch (``model_io.collate``'s output) of ``n_samples`` samples: per row by kind,
    language-model tokens per sample in the layout the forward uses, response tokens per sample."""
    ids, am = batch["input_ids"], batch["attention_mask"].bool()
    n_rows = ids.shape[0]
    video = int(((ids == io.video_token_id) & am).sum())
    audio = int(((ids == io.audio_token_id) & am).sum())
    full = int(am.sum())
    packed = batch.get("packed")
    lm_tokens = int(packed["valid"].sum()) if packed is not None and shared_prefix else full
    response = int((batch["labels"] != -100).sum())
    return {
        "samples": n_samples,
        "rows": n_rows,
        "video": video / n_rows,
        "audio": audio / n_rows,
        "text": (full - video - audio) / n_rows,
        "row_tokens": full / n_rows,
        "lm_tokens_per_sample": lm_tokens / n_samples,
        "response_per_sample": response / n_samples,
        "video_token_id": io.video_token_id,
        "audio_token_id": io.audio_token_id,
    }


def synthetic_rows(out: str, data_args, model_args, check) -> tuple[str, str]:
    """(dataset, media root) under ``out``: one synthetic row per task the recipe trains on, on clips of the
    estimate size as long as the recipe's audio budget (audio tokens follow the clip's length up to
    ``audio_max_seconds``; video tokens the frame count and size, resized under ``video_max_pixels``)."""
    from datasets import Dataset

    from cavpref.bench.rows import examples, write_clips

    media, prefs = os.path.join(out, "media"), os.path.join(out, "prefs")
    seconds = check.estimate_seconds or model_args.audio_max_seconds or 30.0
    write_clips(Path(media), check.estimate_height, check.estimate_width, seconds=seconds)
    tasks = set(data_args.train_tasks or [])
    rows = [e.to_row() for e in examples(1) if not tasks or e.task in tasks]
    if not rows:
        raise CheckError(f"train_tasks {sorted(tasks)}: no AVTrustBench task among them")
    Dataset.from_list(rows).save_to_disk(prefs)
    return prefs, media


def check_paths(train_args, data_args, model_args, check) -> list[str]:
    """Every path the recipe names, before anything loads: a missing launch / model / processor / media path
    is a ``CheckError``; a missing ``train_dataset`` is a note (the tokens are then estimated)."""
    from cavpref.models.published import PUBLISHED
    from cavpref.models.registry import not_a_model

    for key, path in (
        ("accelerate_config", check.accelerate_config),
        ("model_config", check.model_config),
        ("processor_path", check.processor_path),
    ):
        if path and not os.path.exists(path):
            raise CheckError(f"{key} {path!r}: no such file or folder")
    model = model_args.model_name_or_path
    if not model:
        raise CheckError("model_name_or_path is not set: add it to the recipe or pass --model_name_or_path")
    problem = not_a_model(model) if os.path.isdir(model) else None
    if problem:
        raise CheckError(f"model_name_or_path {model!r} is {problem}")
    if not os.path.isdir(model) and model not in PUBLISHED and not check.model_config:
        raise CheckError(
            f"model_name_or_path {model!r}: no such folder and no published config (known: {sorted(PUBLISHED)}); "
            "pass --model_config config.json to size another hub id"
        )
    data = data_args.train_dataset
    if data and os.path.isdir(data):
        if train_args.media_root and not os.path.isdir(train_args.media_root):
            raise CheckError(
                f"media_root {train_args.media_root!r}: no such folder (train_dataset {data!r} exists)"
            )
        return []
    what = f"train_dataset {data!r} not found" if data else "no train_dataset"
    return [
        (
            f"{what}: tokens per row estimated from one synthetic row per task on {check.estimate_height}x"
            f"{check.estimate_width} clips as long as the recipe's audio budget, under its media budgets "
            "(--estimate_height / --estimate_width / --estimate_seconds)"
        )
    ]


def sharding(check):
    from cavpref.memory import Sharding, sharding_from_accelerate

    if not check.accelerate_config:
        return Sharding("single", 1) if not check.num_gpus else Sharding("ddp", check.num_gpus)
    cfg = load_yaml(check.accelerate_config)
    stage = None
    ds = (cfg.get("deepspeed_config") or {}).get("deepspeed_config_file")
    if ds:
        with open(ds) as f:
            stage = json.load(f)["zero_optimization"]["stage"]
    if check.num_gpus:
        cfg["num_processes"], cfg["num_machines"] = check.num_gpus, 1
    return sharding_from_accelerate(cfg, stage)


def decoder_shape(config):
    """The thinker config's language model as ``cavpref.memory.DecoderShape``."""
    from cavpref.memory import DecoderShape

    tc = config.text_config
    return DecoderShape(
        tc.hidden_size,
        tc.intermediate_size,
        tc.num_hidden_layers,
        tc.num_attention_heads,
        tc.num_key_value_heads,
        tc.vocab_size,
        getattr(tc, "head_dim", None),
    )


def lora_shape(train_args, model_args, shape):
    """The recipe's LoRA as ``cavpref.memory.LoraShape`` (None without LoRA). TRL's ``disable_dropout`` (default
    on) sets p = 0 on LoRA's dropout too: then no mask, one input copy per adapter."""
    from cavpref.memory import LoraShape, lora_input_dims

    if model_args.lora_r <= 0:
        return None
    dropout = model_args.lora_dropout > 0 and not train_args.disable_dropout
    return LoraShape(model_args.lora_r, dropout, lora_input_dims(shape, model_args.lora_target_modules))


def estimates(train_args, model_args, config, tokens: dict, shard, counts: tuple[int, int, int]) -> dict:
    """``{"no_checkpointing": Estimate, "checkpointing": Estimate}`` for one micro-batch of
    ``per_device_train_batch_size`` samples with ``tokens`` (``batch_tokens``' per-sample counts); ``counts``:
    (total, trainable, largest unit) parameters, as ``meta_model`` returns them."""
    from cavpref.memory import DTYPE_BYTES, estimate
    from cavpref.train import needs_reference_model

    total, trainable, layer = counts
    shape = decoder_shape(config)
    lora = lora_shape(train_args, model_args, shape)
    wbytes = DTYPE_BYTES.get(model_args.dtype, 4 if not train_args.bf16 else 2)
    per_device = train_args.per_device_train_batch_size
    out = {}
    for ckpt in (False, True):
        out["checkpointing" if ckpt else "no_checkpointing"] = estimate(
            total_params=total,
            trainable_params=trainable,
            weight_bytes=wbytes,
            sharding=shard,
            reference=needs_reference_model(train_args, model_args),
            shape=shape,
            tokens=round(tokens["lm_tokens_per_sample"] * per_device),
            response_tokens=round(tokens["response_per_sample"] * per_device),
            checkpointing=ckpt,
            lora=lora,
            largest_unit_params=layer,
        )
    return out


def run(argv: list[str]) -> dict:
    """Everything ``main`` prints, as data (tests read it)."""
    try:
        train_args, data_args, model_args, check = parse(argv)
    except (ValueError, OSError) as err:  # an unknown key, a missing recipe: one line, as in `cavpref train`
        raise CheckError(str(err)) from err
    notes = check_paths(train_args, data_args, model_args, check)
    config, where = model_config(model_args, check)
    _, total, trainable, layer = meta_model(config, model_args)
    proc, proc_where = processor(model_args, check)
    with tempfile.TemporaryDirectory(prefix="cavpref-check-rows-") as tmp:
        data, media = (
            synthetic_rows(tmp, data_args, model_args, check)
            if notes
            else (data_args.train_dataset, train_args.media_root)
        )
        limit = None if notes else check.sample_rows  # synthetic: every task's row
        tokens = count_tokens(train_args, data_args, model_args, proc, data, media, limit)
    tokens["estimated"] = bool(notes)
    shard = sharding(check)
    out = {
        "config": where,
        "processor": proc_where,
        "notes": notes,
        "total": total,
        "trainable": trainable,
        "tokens": tokens,
        "sharding": shard,
    }
    out.update(estimates(train_args, model_args, config, tokens, shard, (total, trainable, layer)))
    out["gpu_bytes"] = int(check.gpu_memory_gb * GIB)
    out["headroom"] = check.headroom
    out["recipe_checkpointing"] = bool(
        train_args.activation_checkpointing or train_args.gradient_checkpointing
    )
    return out


def _table(out: dict) -> str:
    lines = [
        *(f"note: {n}" for n in out["notes"]),
        f"model config: {out['config']}",
        f"processor: {out['processor']}",
        (
            f"parameters: {out['total']:,} total, {out['trainable']:,} trainable "
            f"({100 * out['trainable'] / out['total']:.2f} %)"
        ),
        f"sharding: {out['sharding'].strategy} over {out['sharding'].world_size} GPU(s)",
    ]
    t = out["tokens"]
    kind = "synthetic samples (one per task)" if t["estimated"] else "samples"
    lines += [
        f"sample: {t['samples']} {kind} -> {t['rows']} rows ({t['rows'] / t['samples']:.2f} rows per sample)",
        (
            f"tokens per row: video {t['video']:.1f}  audio {t['audio']:.1f}  text {t['text']:.1f}  "
            f"= {t['row_tokens']:.1f}"
        ),
        (
            f"language-model tokens per sample (shared prefix as the recipe says): {t['lm_tokens_per_sample']:.1f}; "
            f"response tokens per sample: {t['response_per_sample']:.1f}"
        ),
        "",
    ]
    a, b = out["no_checkpointing"], out["checkpointing"]
    unit, div = ("GiB", GIB) if a.total >= GIB else ("MiB", 1024**2)
    lines.append(f"{'per GPU (' + unit + ')':<14} {'no ckpt':>10} {'ckpt':>10}")
    for key in (*a.parts, "total"):
        va = a.total if key == "total" else a.parts[key]
        vb = b.total if key == "total" else b.parts[key]
        lines.append(f"{key:<14} {va / div:>10.2f} {vb / div:>10.2f}")
    gpu, room = out["gpu_bytes"], out["headroom"]
    lines.append(
        f"{'verdict':<14} {a.verdict(gpu, room):>10} {b.verdict(gpu, room):>10}   "
        f"(GPU {gpu / GIB:g} GiB, {100 * room:g} % headroom kept free; recipe checkpointing: "
        f"{'on' if out['recipe_checkpointing'] else 'off'})"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(__doc__)
        return 0
    try:
        print(_table(run(argv)))
    except CheckError as e:
        print(f"cavpref check: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
