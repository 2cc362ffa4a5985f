"""The sections of the GPU check (``scripts/gpu_check.py``): each takes the ``Context`` and returns a JSON-able
dict (``passed``: False when a check did not hold). Trainers are built as ``cavpref train`` builds them (the
recipe parsed with overrides, ``build_trainer``) and stepped by hand on one collated batch
(``cavpref.bench.steps``)."""

from __future__ import annotations

import contextlib
import gc
import math
import statistics
from pathlib import Path

import torch

from cavpref.bench.agreement import elementwise_relative, gradient_relative
from cavpref.bench.probes import CapturedWarnings, LogpsRecorder, attention_ops, full_fp32
from cavpref.bench.rows import RealisticMedia, benchmark_rows, write_clips
from cavpref.bench.steps import media_tokens, prepare, timed_step
from cavpref.models.shared_prefix import attention_kernel, token_counts


class Context:
    """Settings, device, scratch folder; builds the processor, the rows and one model folder per depth once."""

    def __init__(self, args, device: str, work: Path):
        self.args, self.device, self.work = args, device, work
        self.train_dtype = "bfloat16" if device == "cuda" else "float32"
        self.media = RealisticMedia(args.frames, args.frame_size, args.audio_seconds)
        self.rows = benchmark_rows(max(1, -(-args.batch // 9)))
        self._processor = self._prefs = None
        self._models: dict[int, Path] = {}

    @property
    def prefs(self) -> Path:
        if self._prefs is None:
            from datasets import Dataset

            self._prefs = self.work / "prefs"
            Dataset.from_list([e.to_row() for e in self.rows]).save_to_disk(str(self._prefs))
        return self._prefs

    def model(self, layers: int) -> Path:
        """The real-width (or ``--width tiny``) thinker with ``layers`` decoder layers, saved in bfloat16."""
        if layers not in self._models:
            from cavpref.models.real_config import (
                build_qwen_omni_processor,
                build_qwen_omni_tokenizer,
                build_real_width_qwen_omni,
            )

            if self._processor is None:
                corpus = [e.prompt + " " + e.chosen + " " + e.rejected for e in self.rows]
                self._processor = build_qwen_omni_processor(tokenizer=build_qwen_omni_tokenizer(corpus))
            self._models[layers] = build_real_width_qwen_omni(
                self.work / f"model_{layers}",
                text_layers=layers,
                dtype=torch.bfloat16,
                tiny_widths=self.args.width == "tiny",
                processor=self._processor,
            )
        return self._models[layers]

    def argv(self, name: str, layers: int, *, method="cavpref", lora=True, dtype=None, samples=None, **kw):
        """The recipe plus the check's overrides (``kw``: more recipe keys)."""
        dtype = dtype or self.train_dtype
        keys = {
            "model_name_or_path": self.model(layers),
            "train_dataset": self.prefs,
            "media_root": self.work / "media",
            "output_dir": self.work / "runs" / name,
            "method": method,
            "lora_r": 16 if lora else 0,
            "dtype": dtype,
            "bf16": dtype == "bfloat16",
            "use_cpu": self.device == "cpu",
            "per_device_train_batch_size": samples or self.args.batch,
            "max_train_samples": samples or self.args.batch,
            "gradient_accumulation_steps": 1,
            "activation_checkpointing": False,
            "report_to": "none",
            "save_strategy": "no",
            "dataloader_num_workers": 0,
            "disable_tqdm": True,
            **kw,
        }
        argv = [self.args.recipe]
        for k, v in keys.items():
            values = v if isinstance(v, list) else [v]
            argv += [f"--{k}", *(str(x).lower() if isinstance(x, bool) else str(x) for x in values)]
        return argv

    def trainer(self, name: str, layers: int, **kw):
        """(trainer, train_args, model_args) built as ``cavpref train`` builds them."""
        from cavpref.train import build_trainer, parse

        train_args, data_args, model_args = parse(self.argv(name, layers, **kw))
        return build_trainer(train_args, data_args, model_args), train_args, model_args

    def allocated(self) -> int | None:
        return torch.cuda.memory_allocated() if self.device == "cuda" else None

    def release(self) -> None:
        gc.collect()
        if self.device == "cuda":
            torch.cuda.empty_cache()


# ----- 1. exactness -----------------------------------------------------------------------------------------
def _step_results(ctx: Context, dtype: str) -> tuple[dict, dict]:
    """One CAVPref step's log-probs, loss and gradients with shared prefixes on (True) and off (False), then the
    optimizer step; and the facts of that step."""
    tr, _, _ = ctx.trainer(f"exact_{dtype}", ctx.args.exact_layers, lora=False, dtype=dtype)
    inputs = prepare(tr, tr.train_dataset, ctx.media)
    rec, got = LogpsRecorder(tr.model_io), {}
    with full_fp32(ctx.device) if dtype == "float32" else contextlib.nullcontext():
        for shared in (True, False):
            tr.optimizer.zero_grad(set_to_none=True)
            tr.model_io.shared_prefix = shared
            rec.calls.clear()
            loss = tr.training_step(tr.model, inputs).reshape(1).float()
            grads = {n: p.grad.detach().clone() for n, p in tr.model.named_parameters() if p.grad is not None}
            got[shared] = {"loss": loss, "policy": rec.calls[0], "reference": rec.calls[1], "grads": grads}
        tr.model_io.shared_prefix = True
        tr.optimizer.step()  # on the full-row gradients: the update is the same either way, within the above
        tr.optimizer.zero_grad(set_to_none=True)
    rec.close()
    counts = token_counts(inputs["model_inputs"])
    facts = {
        "dtype": dtype,
        "rows": int(inputs["num_rows"]),
        "lm_tokens_full": counts["full_rows"],
        "lm_tokens_shared": counts["shared_prefix"],
        "parameters_with_gradient": len(got[True]["grads"]),
        "parameters_finite_after_step": all(
            bool(torch.isfinite(p).all()) for p in tr.model.parameters() if p.requires_grad
        ),
    }
    return got, facts


def _apart(a: dict, b: dict) -> dict:
    """How far step results ``a`` are from ``b``."""
    grads, name = gradient_relative(a["grads"], b["grads"])
    out = {k: elementwise_relative(a[k], b[k]) for k in ("policy", "reference", "loss")}
    return {**out, "gradients": grads, "worst_gradient": name}


def exactness(ctx: Context) -> dict:
    """float32: shared vs full rows within ``fp32_rtol`` (log-probs, loss, every gradient tensor). bfloat16: log-probs
    and loss within ``bf16_rtol``; gradients: shared prefixes no farther from the float32 step than full rows are,
    within ``bf16_grad_factor`` (bf16's own error is the scale: shared and full rows round differently)."""
    a, results, rows = ctx.args, {}, []
    for dtype in a.dtypes:
        got, facts = _step_results(ctx, dtype)
        row = {**facts, "shared_vs_full": _apart(got[True], got[False])}
        if dtype == "float32":  # only its full rows are kept: the truth bf16 is measured against
            del got[True]
        results[dtype] = got
        rows.append(row)
        ctx.release()
    for row in rows:
        d, apart = row["dtype"], row["shared_vs_full"]
        if d == "float32":
            row["rule"] = f"every value within {a.fp32_rtol:g} relative"
            row["passed"] = max(apart[k] for k in ("policy", "reference", "loss", "gradients")) <= a.fp32_rtol
        else:
            row["rule"] = f"log-probs, loss within {a.bf16_rtol:g}"
            row["passed"] = max(apart[k] for k in ("policy", "reference", "loss")) <= a.bf16_rtol
            if "float32" in results:
                truth = results["float32"][False]
                row["vs_float32"] = {
                    "shared": _apart(results[d][True], truth),
                    "full": _apart(results[d][False], truth),
                }
                err = {k: v["gradients"] for k, v in row["vs_float32"].items()}
                row["rule"] += f"; gradients' distance to float32 within {a.bf16_grad_factor:g}x full rows'"
                row["passed"] = row["passed"] and err["shared"] <= a.bf16_grad_factor * err["full"]
        row["passed"] = bool(row["passed"] and row["parameters_finite_after_step"])
    results.clear()
    return {"rows": rows, "passed": all(r["passed"] for r in rows)}


# ----- 2. attention -----------------------------------------------------------------------------------------
def attention(ctx: Context) -> dict:
    from torch.profiler import ProfilerActivity, profile

    from cavpref.models import Row, load_model_io
    from cavpref.models.shared_prefix import unsupported_reason
    from cavpref.train import parse

    _, _, model_args = parse(ctx.argv("attention", ctx.args.exact_layers))
    io = load_model_io(model_args)
    io.model.to(ctx.device).eval()
    picked = [e for e in ctx.rows if e.task in ("MVIT", "MAT")][:2]
    rows = [
        Row(e.prompt, resp, ctx.media(e.media), e.media, f"{e.id}/{k}")
        for e in picked
        for k, resp in (("w", e.chosen), ("l", e.rejected))
    ]
    batch = io.collate(rows)
    heads = io.model.config.get_text_config().num_attention_heads
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if ctx.device == "cuda" else [])
    out = []
    with torch.no_grad(), CapturedWarnings("cavpref.models.chat") as logged:
        io.model.set_attn_implementation("sdpa")
        io.shared_prefix = False
        reference = io.logps(io.model, batch).float()
        for impl in ctx.args.attention:
            try:
                io.model.set_attn_implementation(impl)
            except Exception as err:  # noqa: BLE001 - "not available here" is the finding
                out.append({"requested": impl, "loaded": False, "error": f"{type(err).__name__}: {err}"})
                continue
            for shared in (True, False):
                io.shared_prefix = shared
                logged.messages.clear()
                with profile(activities=activities, record_shapes=True) as prof:
                    lp = io.logps(io.model, batch).float()
                reason = unsupported_reason(io.model) if shared else None
                out.append(
                    {
                        "requested": impl,
                        "loaded": True,
                        "kernel": attention_kernel(io.model),
                        "layout": "shared prefix" if shared else "full rows",
                        "shared_prefix_ran": shared and reason is None,
                        "fallback_reason": reason,
                        "logged": [m for m in logged.messages if "shared-prefix" in m],
                        "ops": attention_ops(prof, heads),
                        "logps_vs_sdpa_full_rows": elementwise_relative(lp, reference),
                    }
                )
    del io
    return {"rows": out, "rows_scored": len(rows), "lm_tokens": token_counts(batch)}


# ----- 3. memory --------------------------------------------------------------------------------------------
def _estimated_growth(run: dict) -> int:
    """What the estimate says a step allocates on top of weights, optimizer states and the reference."""
    return run["estimate"]["activations"] + run["estimate"]["gradients"]


def memory(ctx: Context) -> dict:
    from cavpref.apps import check
    from cavpref.memory import Sharding, layer_saved_bytes

    runs, per_layer = [], []
    for mode in ctx.args.memory_modes:
        by_depth = {}
        for layers in ctx.args.memory_layers:
            ctx.release()
            before = ctx.allocated()
            tr, train_args, model_args = ctx.trainer(f"mem_{mode}_{layers}", layers, lora=mode == "lora")
            inputs = prepare(tr, tr.train_dataset, ctx.media)
            if ctx.device == "cuda":  # warm-up: AdamW's states (in the allocator's base) exist from here on
                timed_step(tr, inputs, ctx.device)
            m = timed_step(tr, inputs, ctx.device, exclude_parameters=True)
            batch = inputs["model_inputs"]
            tokens = check.batch_tokens(tr.model_io, batch, ctx.args.batch, shared_prefix=True)
            config, _ = check.model_config(model_args, check.CheckArguments())
            _, total, trainable, unit = check.meta_model(config, model_args)
            est = check.estimates(
                train_args, model_args, config, tokens, Sharding("single"), (total, trainable, unit)
            )
            est = est["no_checkpointing"]
            packed = batch.get("packed")  # the recipe's layout: shared prefixes
            run = {
                "mode": mode,
                "layers": layers,
                "lm_tokens": round(tokens["lm_tokens_per_sample"] * ctx.args.batch),
                "positions": int((packed if packed is not None else batch)["input_ids"].numel()),
                "saved_bytes": m.saved_bytes,
                "peak_bytes": None if m.peak_bytes is None else m.peak_bytes - before,
                "step_growth_bytes": None if m.peak_bytes is None else m.peak_bytes - m.base_bytes,
                "estimate": dict(est.parts),
                "estimate_total": est.total,
            }
            run["peak_vs_estimate"] = None if run["peak_bytes"] is None else run["peak_bytes"] / est.total
            runs.append(run)
            shape = check.decoder_shape(config)
            by_depth[layers] = (run, shape, check.lora_shape(train_args, model_args, shape))
            del tr, inputs, batch
        if len(by_depth) == 2:
            (lo, shape, lora), (hi, _, _) = (by_depth[k] for k in sorted(by_depth))
            depth = hi["layers"] - lo["layers"]
            formula = layer_saved_bytes(shape, 2 if ctx.train_dtype == "bfloat16" else 4, lora)
            saved = (hi["saved_bytes"] - lo["saved_bytes"]) / depth / hi["positions"]
            est_layer = (_estimated_growth(hi) - _estimated_growth(lo)) / depth / hi["lm_tokens"]
            measured = None
            if hi["step_growth_bytes"] is not None:
                measured = (hi["step_growth_bytes"] - lo["step_growth_bytes"]) / depth / hi["lm_tokens"]
            per_layer.append(
                {
                    "mode": mode,
                    "saved_per_position": saved,
                    "formula_per_position": formula,
                    "saved_vs_formula": saved / formula,
                    "allocator_per_lm_token": measured,
                    "estimate_per_lm_token": est_layer,
                    "allocator_vs_estimate": None if measured is None else measured / est_layer,
                    "positions_per_lm_token": hi["positions"] / hi["lm_tokens"],
                }
            )
    return {"runs": runs, "per_layer": per_layer}


# ----- 4. throughput ----------------------------------------------------------------------------------------
def throughput(ctx: Context) -> dict:
    cases = []
    for method in ("dpo", "cavpref"):
        tr, _, _ = ctx.trainer(f"time_{method}", ctx.args.time_layers, method=method)
        inputs = prepare(tr, tr.train_dataset, ctx.media)
        batch = inputs["model_inputs"]
        counts = token_counts(batch)
        for shared in (False, True):
            packed = batch.get("packed") if shared else None
            cases.append(
                {
                    "config": f"{'DPO' if method == 'dpo' else 'CAVPref'} {'shared' if shared else 'full rows'}",
                    "trainer": tr,
                    "inputs": inputs,
                    "shared": shared,
                    "rows": int(inputs["num_rows"]),
                    "prefixes": int(packed["input_ids"].shape[0])
                    if packed is not None
                    else int(inputs["num_rows"]),
                    "lm_tokens": counts["shared_prefix" if shared else "full_rows"],
                    "positions": int((packed if packed is not None else batch)["input_ids"].numel()),
                    "media_tokens_per_row": media_tokens(tr.model_io, batch),
                    "times": [],
                    "peak": [],
                }
            )
    warmup = ctx.args.warmup
    for r in range(warmup + ctx.args.rounds):  # interleaved, so a slow spell hits every config alike
        for c in cases:
            c["trainer"].model_io.shared_prefix = c["shared"]
            m = timed_step(c["trainer"], c["inputs"], ctx.device)
            if r >= warmup:
                c["times"].append(m.seconds)
                c["peak"].append(m.peak_bytes if m.peak_bytes is not None else m.saved_bytes)
    base = cases[0]
    out = []
    for c in cases:
        best = min(c["times"])
        out.append(
            {
                **{
                    k: c[k]
                    for k in ("config", "rows", "prefixes", "lm_tokens", "positions", "media_tokens_per_row")
                },
                "step_s_best": best,
                "step_s_median": statistics.median(c["times"]),
                "lm_tokens_per_s": c["lm_tokens"] / best,
                "speed_vs_dpo_full": min(base["times"]) / best,
                "token_ideal": base["lm_tokens"] / c["lm_tokens"],
                "memory_bytes": max(c["peak"]),
                "memory_kind": "peak allocated" if ctx.device == "cuda" else "saved tensors",
            }
        )
        c["trainer"].model_io.shared_prefix = True
    cases.clear()
    return {"rows": out, "layers": ctx.args.time_layers, "rounds": ctx.args.rounds, "warmup": warmup}


# ----- 5. the real-processor row ----------------------------------------------------------------------------
def real_row(ctx: Context) -> dict:
    from cavpref.apps import check

    a = ctx.args
    media = ctx.work / f"media_{a.height}x{a.width_px}"
    write_clips(media, a.height, a.width_px, a.seconds)
    keys = {"train_tasks": ["MCIT"], "media_root": media}
    argv = ctx.argv("real_row", a.exact_layers, samples=1, **keys)
    predicted = check.run([*argv, "--sample_rows", "1"])["tokens"]
    tr, _, model_args = ctx.trainer("real_row", a.exact_layers, samples=1, **keys)
    inputs = prepare(tr, tr.train_dataset)  # the real decoder: PyAV, then the processor
    batch = inputs["model_inputs"]
    measured = check.batch_tokens(tr.model_io, batch, 1, shared_prefix=True)
    step = timed_step(tr, inputs, ctx.device)
    grid = batch["media"].get("video_grid_thw")
    keys = ("video", "audio", "text", "row_tokens")
    return {
        "clip": f"{a.width_px}x{a.height}, {a.seconds:g} s, {model_args.num_frames} frames",
        "video_grid_thw": grid.tolist() if grid is not None else None,
        "predicted": {k: predicted[k] for k in keys},
        "measured": {k: measured[k] for k in keys},
        "rows": measured["rows"],
        "step_s": round(step.seconds, 3),
        "passed": all(math.isclose(predicted[k], measured[k]) for k in keys),
    }


SECTIONS = {
    "exactness": exactness,
    "attention": attention,
    "memory": memory,
    "throughput": throughput,
    "real_row": real_row,
}
