"""Trainer step cost, side by side in one run: DPO vs CAVPref on all-MVIT, all-MCIT and the paper's uniform 9-task
mix, with the reference as a frozen model or precomputed, and CAVPref's row selection vs a naive implementation
that always scores all six (response | media) conditions.

    python scripts/bench_trainer.py [--batch 9] [--rounds 5] [--hidden 64] [--device auto]

Each configuration gets one fixed collated batch; a step is ``trainer.training_step`` (policy forward, reference
forward unless precomputed, loss, backward) plus the optimizer step, timed with ``time.perf_counter`` (``--clock
cpu``: this process's CPU time) after a warm-up. Configurations are interleaved round by round and the median is reported, so load on the machine hits
all of them alike; ratios are taken within this one run, on the best (min) time of each configuration — the
estimate least disturbed by other load. Memory: CUDA peak allocated on a GPU; on CPU the bytes of activations
autograd saves for backward during the step (there is no CPU peak-allocation counter).
Targets: CAVPref step time ≤ 1.1 × (rows it needs / rows DPO needs) × DPO's; on the 9-task mix ≥ 0.75× DPO's
throughput (samples / s).

Exact Eq. 5 normaliser (issue 13), same data as ``cavpref  mix9``, each step planned as Trainer plans it
(``CAVPrefTrainer.get_batch_samples`` → ``CAVPrefObjective.plan``: counts, β range and, when the step has several micro-batches, the no-grad
policy pass; that pass's reference forward is reused by the backward): ``... exact`` as one micro-batch of 9 (no
extra pass is needed, ideal 1.00 × the unplanned step) and ``... 3x3 exact`` vs ``... 3x3 micro_batch`` as three
accumulated micro-batches of 3 (ideal: + the no-grad policy forward, timed alone in the same rounds). Target: exact
≤ 1.35 × micro_batch. "saved MB" of an accumulated step adds its micro-batches. The approximation error of
``micro_batch`` is measured on the 9-task mix split into 3 micro-batches of 3: relative difference of its step
gradient to the exact one.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch

from cavpref.bench.rows import benchmark_rows, write_clips
from cavpref.bench.steps import SavedActivations
from cavpref.parsing import parse_args

# The step timer: wall time (``time.perf_counter``) or this process's CPU time (``time.process_time``; with one
# torch thread on a CPU shared with other jobs it counts the work, not the wait for a core). Set from ``--clock``.
CLOCK = [time.perf_counter]


def build_inputs(root: Path, hidden: int, per_task: int):
    from datasets import Dataset

    from cavpref.models.tiny import build_tiny_qwen_omni

    write_clips(root / "media")
    examples = benchmark_rows(per_task)  # distinct prompts: no two samples share a row
    build_tiny_qwen_omni(
        root / "model",
        hidden_size=hidden,
        num_hidden_layers=2,
        intermediate_size=2 * hidden,
        extra_corpus=[e.prompt + " " + e.chosen + " " + e.rejected for e in examples],
    )
    return Dataset.from_list([e.to_row() for e in examples])


class NaiveCollator:
    """The straightforward implementation: six rows per sample (y_w, y_l and both anchor pairs), no
    deduplication, missing anchors filled with the presented pair; the loss masks unused terms afterwards."""

    def __init__(self, inner):
        self.inner = inner

    def __call__(self, examples):
        from cavpref.collator import SLOTS

        padded = []
        for ex in examples:
            ex = dict(ex)
            for kind in ("visual", "audio"):
                if ex.get(f"{kind}_response") is None:
                    ex[f"{kind}_response"], ex[f"{kind}_clean"], ex[f"{kind}_perturbed"] = (
                        ex["chosen"],
                        ex["media"],
                        ex["media"],
                    )
            padded.append(ex)
        media = {}
        kept = []
        for ex in padded:
            self.inner._decode_all(ex, SLOTS, media)
            kept.append((ex, SLOTS))
        from cavpref.models.base import Row

        rows, slot_idx = [], {s: [] for s in SLOTS}
        for i, (ex, _) in enumerate(kept):
            for s in SLOTS:
                from cavpref.collator import SLOT_FIELDS

                resp, col = SLOT_FIELDS[s]
                slot_idx[s].append(len(rows))
                rows.append(Row(ex["prompt"], ex[resp], media[ex[col]], ex[col], f"{ex['id']}/{s}"))
        batch = self.inner._build(kept, media)
        batch["model_inputs"] = self.inner.model_io.collate(rows)
        batch["slots"] = {s: torch.tensor(v) for s, v in slot_idx.items()}
        # the switches still decide which terms count
        sw = self.inner.switches
        batch["eta"] = torch.tensor([sw[ex["task"]][0] for ex, _ in kept])
        batch["gamma"] = torch.tensor([sw[ex["task"]][1] for ex, _ in kept])
        batch["num_rows"] = torch.tensor(len(rows))
        batch["skipped"] = []
        return batch


def make_case(
    name,
    method,
    tasks,
    precompute,
    naive,
    data,
    model_io,
    model_dir,
    media,
    batch,
    out,
    device,
    exact=None,
    micro=1,
    ckpt=False,
):
    from cavpref.config import CAVPrefConfig
    from cavpref.media.decode import FramePolicy
    from cavpref.models import AVModelArguments, load_model_io
    from cavpref.trainer import CAVPrefTrainer

    rows = data if tasks == "mix" else data.select([i for i, t in enumerate(data["task"]) if t in tasks])
    rows = rows.select(range(min(batch, len(rows))))  # the mix: rows come task by task, one of each per 9
    args = CAVPrefConfig(
        output_dir=str(out / name),
        method=method,
        per_device_train_batch_size=batch,
        max_steps=1,
        bf16=False,
        use_cpu=device == "cpu",
        activation_checkpointing=ckpt,
        report_to="none",
        learning_rate=1e-4,
        media_root=str(media),
        save_strategy="no",
        disable_tqdm=True,
        precompute_ref_log_probs=precompute,
        ref_cache_dir=str(out / "refcache" / name),
    )
    model = load_model_io(AVModelArguments(model_name_or_path=str(model_dir), dtype="float32")).model
    tr = CAVPrefTrainer(model, model_io, args=args, train_dataset=rows, frames=FramePolicy(num_frames=4))
    if ckpt:  # what Trainer.train() does for gradient_checkpointing, which the bench does not call
        tr.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    tr.create_optimizer()
    tr.current_gradient_accumulation_steps = 1  # set by Trainer's loop, which the bench drives by hand
    collate = NaiveCollator(tr.data_collator) if naive else tr.data_collator
    ex = list(tr.train_dataset)
    if exact is not None:
        args.robust_normalizer = exact
    t0 = time.perf_counter()
    k = -(-len(ex) // micro)
    inputs = collate(ex) if micro == 1 else [collate(ex[i : i + k]) for i in range(0, len(ex), k)]
    collate_s = time.perf_counter() - t0
    return {
        "name": name,
        "trainer": tr,
        "inputs": inputs,
        "collate_s": collate_s,
        "samples": len(ex),
        "rows": int(inputs["num_rows"]) if micro == 1 else sum(int(b["num_rows"]) for b in inputs),
        "times": [],
        "mem": [],
        "exact": exact,
        "nograd": [],
    }


def step(case, device):
    tr = case["trainer"]
    if device == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    micro = case["inputs"] if isinstance(case["inputs"], list) else [case["inputs"]]
    t0 = CLOCK[0]()
    if case.get("exact") is not None:  # Trainer draws (and our trainer plans) the step's micro-batches first
        micro, _ = tr.get_batch_samples(iter([dict(b) for b in micro]), len(micro), tr.args.device)
    tr.current_gradient_accumulation_steps = len(micro)
    with SavedActivations() as saved:
        for inputs in micro:
            tr.training_step(tr.model, inputs)
    tr.optimizer.step()
    tr.optimizer.zero_grad(set_to_none=True)
    if device == "cuda":
        torch.cuda.synchronize()
    dt = CLOCK[0]() - t0
    return dt, (torch.cuda.max_memory_allocated() if device == "cuda" else saved.bytes)


def nograd_forward(case) -> float:
    """Seconds of the exact pass's extra work alone: the no-grad policy forward over the step's micro-batches."""
    from cavpref.trainer.checkpointing import checkpointing_paused

    tr = case["trainer"]
    t0 = CLOCK[0]()
    for b in case["inputs"] if isinstance(case["inputs"], list) else [case["inputs"]]:
        with torch.no_grad(), checkpointing_paused(tr.model):
            tr.model_io.logps(tr.model, b["model_inputs"])
    return CLOCK[0]() - t0


def micro_batch_error(data, model_io, out, device, batch):
    """Relative gradient difference, micro_batch vs exact normaliser, on the mix split into 3 micro-batches."""
    errors = {}
    for robust in ("paper", "worst_case"):
        grads = {}
        for mode in ("exact", "micro_batch"):
            case = make_case(
                f"err-{robust}-{mode}",
                "cavpref",
                "mix",
                True,
                False,
                data,
                model_io,
                out / "model",
                out / "media",
                batch,
                out,
                device,
            )
            tr = case["trainer"]
            tr.args.robust, tr.args.robust_normalizer = robust, mode
            gen = torch.Generator().manual_seed(0)  # policy != reference: unequal weights
            with torch.no_grad():
                for p in tr.model.parameters():
                    p.add_(0.05 * torch.randn(p.shape, generator=gen, dtype=p.dtype))
            ex = list(tr.train_dataset)
            k = max(1, len(ex) // 3)
            micro = [tr.data_collator(ex[i : i + k]) for i in range(0, len(ex), k)]
            micro, _ = tr.get_batch_samples(iter(micro), len(micro), tr.args.device)
            tr.current_gradient_accumulation_steps = len(micro)
            tr.model.zero_grad(set_to_none=True)
            for mb in micro:
                tr.training_step(tr.model, mb)
            grads[mode] = torch.cat([p.grad.reshape(-1) for p in tr.model.parameters() if p.grad is not None])
        errors[robust] = float((grads["micro_batch"] - grads["exact"]).norm() / grads["exact"].norm())
    return errors


@dataclass
class BenchArguments:
    batch: int = field(default=9, metadata={"help": "samples per step (one per task in the mix)"})
    rounds: int = field(default=5, metadata={"help": "timed rounds (median reported)"})
    hidden: int = field(default=64, metadata={"help": "hidden size of the tiny thinker"})
    device: Literal["auto", "cpu", "cuda"] = field(
        default="auto", metadata={"help": "auto: cuda when available"}
    )
    clock: Literal["wall", "cpu"] = field(
        default="wall",
        metadata={
            "help": "wall: time.perf_counter; cpu: this process's CPU time (use with OMP_NUM_THREADS=1 on a CPU "
            "shared with other jobs: it counts the work, not the wait for a core)"
        },
    )


def main(argv=None):
    (args,) = parse_args(
        [BenchArguments], sys.argv[1:] if argv is None else argv, prog="scripts/bench_trainer.py"
    )
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    CLOCK[0] = time.process_time if args.clock == "cpu" else time.perf_counter
    from cavpref.models import AVModelArguments, load_model_io

    out = Path(tempfile.mkdtemp(prefix="bench_trainer_"))
    data = build_inputs(out, args.hidden, per_task=max(1, args.batch))
    model_io = load_model_io(AVModelArguments(model_name_or_path=str(out / "model"), dtype="float32"))
    specs = []
    for tasks, label in (("mix", "mix9"), (("MVIT",), "MVIT"), (("MCIT",), "MCIT")):
        for pre in (False, True):
            suffix = "  ref-pre" if pre else ""
            specs += [
                (f"dpo  {label}{suffix}", "dpo", tasks, pre, False),
                (f"cavpref  {label}{suffix}", "cavpref", tasks, pre, False),
            ]
    specs += [
        ("naive-6-rows  mix9", "cavpref", "mix", False, True),
        ("naive-6-rows  MVIT", "cavpref", ("MVIT",), False, True),
    ]
    cases = [
        make_case(n, m, t, pre, nv, data, model_io, out / "model", out / "media", args.batch, out, device)
        for n, m, t, pre, nv in specs
    ]
    # The exact normaliser, same data as "cavpref  mix9": the step as one micro-batch (no extra pass needed) and
    # as 3 accumulated micro-batches of 3, exact vs micro_batch, each planned as Trainer plans it.
    # Last: the 7B recipes' setting (precomputed reference allowed, activation checkpointing on, accumulation).
    for pre, ckpt in ((False, False), (True, False), (True, True)):
        suffix = ("  ref-pre" if pre else "") + ("  ckpt" if ckpt else "")
        for micro, mode in ((1, "exact"), (3, "micro_batch"), (3, "exact")):
            if ckpt and micro == 1:
                continue
            shape = "" if micro == 1 else f"  {micro}x{-(-args.batch // micro)}"
            cases.append(
                make_case(
                    f"cavpref  mix9{suffix}{shape}  {mode}",
                    "cavpref",
                    "mix",
                    pre,
                    False,
                    data,
                    model_io,
                    out / "model",
                    out / "media",
                    args.batch,
                    out,
                    device,
                    exact=mode,
                    micro=micro,
                    ckpt=ckpt,
                )
            )
    approx_error = micro_batch_error(data, model_io, out, device, args.batch)
    for case in cases:  # warm-up
        step(case, device)
    for _ in range(args.rounds):
        for case in cases:
            dt, mem = step(case, device)
            case["times"].append(dt)
            case["mem"].append(mem)
            if case["name"].endswith("micro_batch"):
                case["nograd"].append(nograd_forward(case))
    by = {c["name"]: c for c in cases}
    for c in cases:
        c["base"] = (
            c["name"].split("  exact")[0].split("  micro_batch")[0].split("  3x")[0].replace("  ckpt", "")
        )
    best = {n: min(c["times"]) for n, c in by.items()}
    print(
        f"device={device} hidden={args.hidden} batch={args.batch} rounds={args.rounds} "
        f"torch_threads={torch.get_num_threads()} clock={args.clock}"
    )
    mem_label = "peak MB" if device == "cuda" else "saved MB"
    print(
        f"| config | rows | step s (min) | step s (median) | samples/s | time vs DPO | rows vs DPO | collate s | "
        f"{mem_label} |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for c in cases:
        d = by[c["base"].replace("cavpref", "dpo").replace("naive-6-rows", "dpo")]
        print(
            f"| {c['name']} | {c['rows']} | {best[c['name']]:.3f} | {statistics.median(c['times']):.3f} | "
            f"{c['samples'] / best[c['name']]:.1f} | {best[c['name']] / best[d['name']]:.2f} | "
            f"{c['rows'] / d['rows']:.2f} | {c['collate_s']:.3f} | {max(c['mem']) / 2**20:.1f} |"
        )
    print()
    for suffix in ("", "  ref-pre"):
        mix = best["dpo  mix9" + suffix] / best["cavpref  mix9" + suffix]
        print(
            f"9-task mix{suffix or ''}: CAVPref throughput = {mix:.2f} x DPO's (target >= 0.75) -> "
            f"{'ok' if mix >= 0.75 else 'MISSED'}"
        )
        for label in ("mix9", "MVIT", "MCIT"):
            c, d = by[f"cavpref  {label}{suffix}"], by[f"dpo  {label}{suffix}"]
            bound = 1.1 * c["rows"] / d["rows"] * best[d["name"]]
            print(
                f"  {c['name']}: {best[c['name']]:.3f} s vs 1.1 x (rows {c['rows']}/{d['rows']}) x DPO = {bound:.3f} s "
                f"-> {'ok' if best[c['name']] <= bound else 'MISSED'}"
            )
    for suffix in ("", "  ref-pre", "  ref-pre  ckpt"):
        if "ckpt" not in suffix:
            today, one = best["cavpref  mix9" + suffix], best["cavpref  mix9" + suffix + "  exact"]
            print(
                f"exact normaliser, mix9{suffix}, one micro-batch of {args.batch} (no extra pass): {one:.3f} s vs "
                f"{today:.3f} s unplanned = {one / today:.2f}x (ideal 1.00; target <= 1.35) -> "
                f"{'ok' if one / today <= 1.35 else 'MISSED'}"
            )
        shape = f"  3x{-(-args.batch // 3)}"
        approx = by["cavpref  mix9" + suffix + shape + "  micro_batch"]
        exact = best["cavpref  mix9" + suffix + shape + "  exact"]
        nograd = min(approx["nograd"])
        ideal = (best[approx["name"]] + nograd) / best[approx["name"]]
        print(
            f"exact normaliser, mix9{suffix}, {shape.strip()} accumulated: {exact:.3f} s vs "
            f"{best[approx['name']]:.3f} s with micro_batch = {exact / best[approx['name']]:.2f}x (ideal "
            f"{ideal:.2f}: + one no-grad policy forward, {nograd:.3f} s measured; target <= 1.35) -> "
            f"{'ok' if exact / best[approx['name']] <= 1.35 else 'MISSED'}"
        )
    print(
        f"micro_batch normaliser, 9-task mix as 3 micro-batches of 3: gradient relative difference to exact = "
        f"{approx_error['paper']:.3g} (robust paper), {approx_error['worst_case']:.3g} (worst_case)"
    )
    for label in ("mix9", "MVIT"):
        naive, ours = by[f"naive-6-rows  {label}"], by[f"cavpref  {label}"]
        print(
            f"rows per step, {label}: {ours['rows']} needed vs {naive['rows']} naive (always 6 conditions): naive "
            f"step = {best[naive['name']] / best[ours['name']]:.2f} x ours"
        )


if __name__ == "__main__":
    main()
