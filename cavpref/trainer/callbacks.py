"""Trainer callbacks of ``cavpref train``."""

from __future__ import annotations

import json
import os

from transformers import TrainerCallback


class JsonlLogger(TrainerCallback):
    """Every log record (step, loss, per-component and per-task metrics) appended to output_dir/logs.jsonl."""

    def on_log(self, args, state, control, logs=None, **kwargs):
        if state.is_world_process_zero and logs:
            os.makedirs(args.output_dir, exist_ok=True)
            with open(os.path.join(args.output_dir, "logs.jsonl"), "a") as f:
                f.write(json.dumps({"step": state.global_step, **logs}) + "\n")


class TrainingProgress(TrainerCallback):
    """What the trainer needs from Trainer's loop, through its public callback events:

    * the epoch of our batch sampler (``PreferenceBatchSampler.set_epoch``): after a resume accelerate's
      skip-batches wrapper hides it from Trainer's own ``set_epoch``, and its shuffle order depends on it;
    * the global step a ``train()`` call started from (a resume's) and that of the last loss log, for the
      logged loss when steps were dropped (``skip_bad_rows``)."""

    def __init__(self, sampler_of):
        self.sampler_of = sampler_of  # () -> the trainer's current PreferenceBatchSampler, or None
        self.start_step = self.last_loss_log = 0

    def on_train_begin(self, args, state, control, **kwargs):
        self.start_step = self.last_loss_log = state.global_step

    def on_epoch_begin(self, args, state, control, **kwargs):
        sampler = self.sampler_of()
        if sampler is not None:  # state.epoch: whole epochs done plus the fraction of this one (a resume's)
            sampler.set_epoch(int((state.epoch or 0) + 1e-9))
