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
