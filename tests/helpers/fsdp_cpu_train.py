"""``cavpref train`` under accelerate's FSDP plugin on CPU processes (gloo), for tests/trainer/test_trainer_fsdp.py.

accelerate turns its FSDP plugin on only for accelerator devices: on CPU processes the launch's FSDP config
is dropped and the run silently becomes plain multi-CPU data parallel. This launcher lifts that one check
(after accelerate's own state set-up, FSDP on, with the plugin accelerate built from the launch config); the
trainer, the model I/O and FSDP2's ``fully_shard`` are the real ones.
    accelerate launch --config_file recipes/accelerate/fsdp_cpu_2proc.yaml tests/helpers/fsdp_cpu_train.py RECIPE.yaml
"""

from __future__ import annotations

import sys

from accelerate import state as accelerate_state
from accelerate.utils import DistributedType

_init = accelerate_state.AcceleratorState.__init__


def _init_fsdp_on_cpu(self, *args, fsdp_plugin=None, **kwargs):
    _init(self, *args, fsdp_plugin=fsdp_plugin, **kwargs)
    if fsdp_plugin is not None and self.distributed_type == DistributedType.MULTI_CPU:
        self.distributed_type = DistributedType.FSDP
        self.fsdp_plugin = fsdp_plugin
        # every later AcceleratorState() copies PartialState's fields back in, as accelerate itself does here
        accelerate_state.PartialState._shared_state["distributed_type"] = DistributedType.FSDP


accelerate_state.AcceleratorState.__init__ = _init_fsdp_on_cpu

if __name__ == "__main__":
    from cavpref.trainer import trainer as trainer_module

    _prepare = trainer_module.CAVPrefTrainer._prepare_for_training

    def _prepare_and_report(self, *args, **kwargs):
        out = _prepare(self, *args, **kwargs)
        state = self.accelerator.state
        root = type(self.model_wrapped).__name__.removeprefix("FSDP")
        print(
            f"distributed_type={state.distributed_type.value} fsdp_version={state.fsdp_plugin.fsdp_version} "
            f"root={root}",
            flush=True,
        )
        return out

    trainer_module.CAVPrefTrainer._prepare_for_training = _prepare_and_report
    from cavpref.train import main

    sys.exit(main(sys.argv[1:]))
