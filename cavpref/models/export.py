"""``cavpref export``: a trained thinker as a full Qwen2.5-Omni checkpoint (talker and token2wav included).

A run trains and saves the thinker only (or a LoRA adapter on it); people serve
``Qwen2_5OmniForConditionalGeneration``, whose talker and token2wav speak the answer. Export loads the original
full checkpoint with transformers, puts the trained thinker weights into its ``thinker`` (a LoRA adapter merged
with PEFT first, or kept as an adapter for the full model when ``merge_lora`` is false), and saves a new folder
with ``save_pretrained``, the processor and the speakers file (``spk_dict.pt``) beside it, plus a model card.
Neither input folder is written to.

    cavpref export --run runs/my_run --base_model Qwen/Qwen2.5-Omni-7B --output_dir runs/my_run_full
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch

from cavpref.output_dir import OutputArguments, output_dir
from cavpref.parsing import load_yaml

ADAPTER_DIR = "thinker_adapter"  # merge_lora false: the adapter, re-keyed for the full model
SPEAKERS = "spk_dict.pt"
# The processor's outputs that only the thinker's vision encoder reads. transformers 5.25's
# ``Qwen2_5OmniForConditionalGeneration.generate`` hands every input without a ``thinker_`` / ``talker_`` prefix
# to the talker's ``generate`` too, whose kwargs check rejects these (``ValueError: The following model_kwargs
# are not used by the model: ['pixel_values_videos']``), so a video or image prompt cannot be spoken about.
# Given as ``thinker_<name>`` (generate's own per-module route) they reach the thinker alone, and generate still
# blanks the vision positions of the hidden states it passes the talker, as it does for un-prefixed ones.
THINKER_ONLY_INPUTS = ("pixel_values", "pixel_values_videos")
GENERATE_INPUTS_LINE = (
    f'inputs = {{("thinker_" + k if k in {THINKER_ONLY_INPUTS!r} else k): v for k, v in inputs.items()}}'
)


def speech_generate_inputs(inputs) -> dict:
    """The processor's ``inputs`` as ``Qwen2_5OmniForConditionalGeneration.generate`` takes them with speech on:
    the vision encoder's inputs under the ``thinker_`` prefix (``THINKER_ONLY_INPUTS``; the exported model card
    writes the same line, ``GENERATE_INPUTS_LINE``, for users without cavpref)."""
    return {("thinker_" + k if k in THINKER_ONLY_INPUTS else k): v for k, v in inputs.items()}


@dataclass
class ExportModelArgs(OutputArguments):
    """``cavpref export``: a run's thinker (or LoRA adapter) + the original full model -> a full model folder."""

    run: str = field(
        default="",
        metadata={
            "help": "the trained model: a run's output_dir or a checkpoint-N folder (thinker or LoRA adapter)"
        },
    )
    output_dir: str = field(default="", metadata={"help": "new folder for the full model (required)"})
    base_model: str | None = field(
        default=None,
        metadata={
            "help": "full Qwen2.5-Omni checkpoint (talker, token2wav, spk_dict.pt); default: the run's base"
        },
    )
    merge_lora: bool = field(
        default=True,
        metadata={
            "help": f"LoRA runs: merge into the thinker; false: the base model + {ADAPTER_DIR}/ (PEFT)"
        },
    )
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = field(
        default="auto", metadata={"help": "dtype of the written model (auto: the base checkpoint's)"}
    )


def _run_base(run: Path) -> str | None:
    """The checkpoint a run started from: its adapter's base, else ``model_name_or_path`` of the run's
    ``run_config.yaml`` (in the run folder, or above a ``checkpoint-N`` folder)."""
    adapter = run / "adapter_config.json"
    if adapter.is_file():
        return json.loads(adapter.read_text()).get("base_model_name_or_path")
    for folder in (run, run.parent):
        if (folder / "run_config.yaml").is_file():
            return (load_yaml(folder / "run_config.yaml") or {}).get("model_name_or_path")
    return None


def _model_type(path: str) -> str | None:
    from transformers import PreTrainedConfig

    return PreTrainedConfig.get_config_dict(path)[0].get("model_type")


def _thinker_state(run: Path, base_thinker, run_base: str | None) -> dict[str, torch.Tensor]:
    """The trained thinker's weights: a full thinker folder as saved, or the LoRA adapter merged into the thinker
    it was trained on (which must be the base model's)."""
    from transformers import Qwen2_5OmniThinkerForConditionalGeneration as Thinker

    if not (run / "adapter_config.json").is_file():
        return Thinker.from_pretrained(run, dtype=base_thinker.dtype).state_dict()
    import copy

    from peft import PeftModel

    start = copy.deepcopy(base_thinker)
    if (
        run_base and _model_type(run_base) == "qwen2_5_omni_thinker"
    ):  # trained on a thinker folder: same weights?
        own = Thinker.from_pretrained(run_base, dtype=base_thinker.dtype).state_dict()
        differ = [k for k, v in start.state_dict().items() if k not in own or not torch.equal(own[k], v)]
        if differ:
            raise ValueError(f"{run}: the adapter was trained on {run_base}, whose thinker differs from the base "
                             f"model's (first: {differ[0]}); pass the base model the run started from")  # fmt: skip
    return PeftModel.from_pretrained(start, str(run)).merge_and_unload().state_dict()


def _save_adapter(run: Path, out: Path) -> None:
    """The thinker's LoRA adapter re-keyed for the full model (``thinker.`` before every module name), so
    ``PeftModel.from_pretrained(Qwen2_5OmniForConditionalGeneration.from_pretrained(out), out / ADAPTER_DIR)``
    applies it."""
    import re

    from safetensors.torch import load_file, save_file

    target = out / ADAPTER_DIR
    target.mkdir(parents=True)
    config = json.loads((run / "adapter_config.json").read_text())
    modules = config.get("target_modules")
    config["target_modules"] = (
        rf"thinker\.(?:{modules})" if isinstance(modules, str) else [f"thinker.{m}" for m in modules or []]
    )
    config["modules_to_save"] = [f"thinker.{m}" for m in config.get("modules_to_save") or []] or None
    config["base_model_name_or_path"] = str(out)
    (target / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n")
    weights = load_file(run / "adapter_model.safetensors")
    rekeyed = {re.sub(r"^base_model\.model\.", "base_model.model.thinker.", k): v for k, v in weights.items()}
    save_file(rekeyed, target / "adapter_model.safetensors", metadata={"format": "pt"})


def _copy_speakers(base: str, out: Path) -> None:
    from transformers.utils import cached_file

    path = cached_file(base, SPEAKERS, _raise_exceptions_for_missing_entries=False)
    if path is None:
        raise ValueError(
            f"{base}: no {SPEAKERS} (the speakers the talker needs): not a full Qwen2.5-Omni checkpoint"
        )
    shutil.copyfile(path, out / SPEAKERS)


def export_full_model(args: ExportModelArgs) -> Path:
    """Write ``args.output_dir``: the full Qwen2.5-Omni with the run's thinker; returns the folder."""
    if not args.run or not args.output_dir:
        raise ValueError("cavpref export needs --run and --output_dir")
    run = Path(args.run)
    if not (run / "config.json").is_file() and not (run / "adapter_config.json").is_file():
        raise ValueError(f"{run}: no trained model (config.json or adapter_config.json)")
    run_base = _run_base(run)
    base = args.base_model or run_base
    if not base or _model_type(base) != "qwen2_5_omni":
        raise ValueError(
            f"base model {base!r} is not a full Qwen2.5-Omni checkpoint (model_type qwen2_5_omni, with talker and "
            "token2wav): pass --base_model, e.g. Qwen/Qwen2.5-Omni-7B or the folder the thinker was taken from"
        )
    inputs = {"run": str(run), "base_model": base}  # a hub id is no folder: not checked
    with output_dir(args.output_dir, "export", overwrite=args.overwrite_output_dir, inputs=inputs) as claimed:
        return _write_full_model(args, run, run_base, base, Path(claimed).resolve())


def _write_full_model(args: ExportModelArgs, run: Path, run_base: str | None, base: str, out: Path) -> Path:
    from transformers import AutoProcessor, Qwen2_5OmniForConditionalGeneration

    dtype = "auto" if args.dtype == "auto" else getattr(torch, args.dtype)
    full = Qwen2_5OmniForConditionalGeneration.from_pretrained(base, dtype=dtype)
    lora = (run / "adapter_config.json").is_file()
    if not lora or args.merge_lora:
        state = _thinker_state(run, full.thinker, run_base)
        own = full.thinker.state_dict()
        bad = [k for k in own if k not in state or state[k].shape != own[k].shape]
        if bad or set(state) - set(own):
            first = bad[0] if bad else min(set(state) - set(own))
            raise ValueError(
                f"{run}: the trained thinker does not fit the base model's thinker (first: {first})"
            )
        full.thinker.load_state_dict(state)
    full.save_pretrained(out)
    processor_from = run if (run / "tokenizer_config.json").is_file() else base
    AutoProcessor.from_pretrained(processor_from).save_pretrained(out)
    _copy_speakers(base, out)
    if lora and not args.merge_lora:
        _save_adapter(run, out)
    _write_card(out, run, base, lora and not args.merge_lora)
    return out


def _write_card(out: Path, run: Path, base: str, adapter: bool) -> None:
    """The exported model's card: what was spliced into what, how to load it, and the run's own card."""
    from huggingface_hub import ModelCard, ModelCardData

    from cavpref.cards import TAGS, build_card

    run_card = next((f / "README.md" for f in (run, run.parent) if (f / "README.md").is_file()), None)
    load = (
        "```python\nfrom transformers import Qwen2_5OmniForConditionalGeneration, Qwen2_5OmniProcessor\n\n"
        f'model = Qwen2_5OmniForConditionalGeneration.from_pretrained("{out}")\n'
        f'processor = Qwen2_5OmniProcessor.from_pretrained("{out}")\n'
    )
    if adapter:
        load += (
            f'from peft import PeftModel\n\nmodel = PeftModel.from_pretrained(model, "{out / ADAPTER_DIR}")\n'
        )
    load += (
        '\ninputs = processor(text=prompt, videos=[frames], audio=[wave], return_tensors="pt")\n'
        "# transformers 5.25's generate passes un-prefixed inputs to the talker too, which rejects the vision\n"
        "# encoder's inputs (ValueError ... ['pixel_values_videos']): give those to the thinker alone\n"
        f"{GENERATE_INPUTS_LINE}\n"
        "text_ids, waveform = model.generate(**inputs)  # the answer as token ids and as speech\n"
    )
    what = (
        f"The full Qwen2.5-Omni model of `{base}` (talker, token2wav, speakers) with the thinker trained in "
        f"`{run}`"
        + (f", kept as a LoRA adapter for the full model in `{ADAPTER_DIR}/`" if adapter else "")
        + ", written by `cavpref export` (docs/models.md)."
    )
    sections = [
        ("What this is", what),
        ("Load it", load + "```"),
        ("The training run (its model card)", ModelCard.load(run_card).text if run_card else "no card found"),
    ]
    data = ModelCardData(
        base_model=base if not os.path.isdir(base) else None,
        library_name="transformers",
        tags=sorted({*TAGS, "qwen2_5_omni", "any-to-any"}),
    )
    build_card(data, out.name, sections).save(out / "README.md")


def main(argv: list[str] | None = None) -> int:
    """``cavpref export``; a key, a folder or a checkpoint it cannot use is one line on stderr and exit code 2,
    as in ``cavpref train``, ``check``, ``eval``, ``build``, ``world`` and ``quickstart``."""
    from cavpref.parsing import parse_args

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        (args,) = parse_args([ExportModelArgs], argv, prog="cavpref export")
        out = export_full_model(args)
    except (ValueError, OSError) as err:
        print(f"cavpref export: error: {err}", file=sys.stderr)
        return 2
    print(f"wrote the full Qwen2.5-Omni model to {out} (Qwen2_5OmniForConditionalGeneration.from_pretrained)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
