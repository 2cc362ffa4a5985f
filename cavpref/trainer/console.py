"""The console's view of a run: one short line per logged step instead of transformers' dict of every metric.

A CAVPref step logs ~40 metrics (per component margins, reward accuracies, β, counts: docs/training.md,
"Logged metrics"); printed as a dict that is ~1,100 characters per step. The console keeps the step, the loss,
the learning rate, the gradient norm and the y reward accuracy; every metric still goes to ``logs.jsonl``,
``trainer_state.json`` and the ``report_to`` loggers, which read the logs, not the console.
"""

from __future__ import annotations

from transformers.trainer_callback import PrinterCallback, ProgressCallback

CONSOLE_KEYS = ("loss", "learning_rate", "grad_norm", "y/reward_accuracy", "train_loss", "train_runtime")


def compact(logs: dict, step: int, max_steps: int) -> str:
    """``step 5/120  loss 0.6931  learning_rate 0.0002  grad_norm 1.234  (+37 metrics in logs.jsonl)``."""
    parts = [f"step {step}/{max_steps}"]
    parts += [f"{k} {logs[k]:.4g}" for k in CONSOLE_KEYS if isinstance(logs.get(k), (int, float))]
    rest = len([k for k in logs if k not in CONSOLE_KEYS and k not in ("total_flos", "epoch")])
    if rest:
        parts.append(f"(+{rest} metrics in logs.jsonl)")
    return "  ".join(parts)


class CompactProgressCallback(ProgressCallback):
    """transformers' progress bar, with ``compact`` lines under it instead of the metrics dict."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and self.training_bar is not None and logs:
            self.training_bar.write(compact(logs, state.global_step, state.max_steps))


class CompactPrinterCallback(PrinterCallback):
    """``disable_tqdm``: the ``compact`` line printed instead of the metrics dict."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_local_process_zero and logs:
            print(compact(logs, state.global_step, state.max_steps), flush=True)


def use_compact_console(trainer) -> None:
    """Swap the trainer's console callback (progress bar or printer) for its compact form."""
    for full, short in (
        (ProgressCallback, CompactProgressCallback),
        (PrinterCallback, CompactPrinterCallback),
    ):
        if trainer.pop_callback(full) is not None:
            trainer.add_callback(short)
