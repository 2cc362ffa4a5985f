"""Dataset and model cards: the README.md (YAML metadata + text) that says what a folder holds and how it was made.

A pushed artefact must say what it is: which tasks and counts (a prep output), what was trained on what with
which λ / β / robust settings (a run), what was spliced into what (a full-model export). The cards are
``huggingface_hub.DatasetCard`` / ``ModelCard`` objects, so ``card.push_to_hub(repo_id)`` and the Trainer's own
``push_to_hub`` (which uploads the README.md ``CAVPrefTrainer.create_model_card`` writes) carry them unchanged;
nothing here talks to the hub.

``write_card`` writes any folder's card; ``run_card`` builds a training run's (the trainer calls it); the card
writers of prep, import / export and ``cavpref export`` share ``md_table`` and ``data_fingerprint``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from huggingface_hub import DatasetCard, DatasetCardData, ModelCard, ModelCardData

from cavpref.manifest import prep_manifest
from cavpref.redact import redact

PAPER = (
    "AVTrustBench: Assessing and Enhancing Reliability and Robustness in Audio-Visual LLMs "
    "(AVTrustBench and the CAVPref objective)"
)
TAGS = ("cavpref", "avtrustbench", "audio-visual")


def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table (cells ``|``-escaped)."""

    def cell(x: Any) -> str:
        return str(x).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(map(cell, headers)) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(map(cell, r)) + " |" for r in rows])


def build_card(
    data: DatasetCardData | ModelCardData, title: str, sections: Sequence[tuple[str, str]]
) -> DatasetCard | ModelCard:
    """``data`` as the YAML header, then ``# title`` and one ``## heading`` per non-empty section."""
    body = f"# {title}\n\n" + "\n\n".join(f"## {head}\n\n{text.strip()}" for head, text in sections if text)
    cls = DatasetCard if isinstance(data, DatasetCardData) else ModelCard
    return cls(f"---\n{data.to_yaml()}\n---\n\n{body}\n")


def write_card(
    folder: str | os.PathLike,
    data: DatasetCardData | ModelCardData,
    title: str,
    sections: Sequence[tuple[str, str]],
) -> Path:
    """``folder/README.md`` (see ``build_card``)."""
    path = Path(folder) / "README.md"
    build_card(data, title, sections).save(path)
    return path


def data_fingerprint(dataset: str | None) -> dict[str, Any]:
    """What identifies a training set: the fingerprint of the manifest prep (or an import) wrote next to it,
    else a sha256 of the folder's files (names and bytes)."""
    if not dataset:
        return {}
    path, manifest = prep_manifest(dataset)
    if manifest and manifest.get("fingerprint"):
        return {"dataset": dataset, "fingerprint": manifest["fingerprint"], "from": path}
    h = hashlib.sha256()
    root = Path(dataset)
    for f in sorted(p for p in root.rglob("*") if p.is_file() and not p.name.startswith("cache-")):
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return {"dataset": dataset, "fingerprint": h.hexdigest(), "from": "sha256 of the folder's files"}


def _dataset_folder(trainer) -> str | None:
    """The folder the train set was loaded from (``datasets``' public ``cache_files``)."""
    files = getattr(trainer.train_dataset, "cache_files", None) or []
    if not files:
        return None
    folder = Path(files[0]["filename"]).parent
    # a DatasetDict split lives in <folder>/<split>/: the manifest sits next to <folder>
    return str(folder.parent if (folder.parent / "dataset_dict.json").is_file() else folder)


def _base_model(model) -> tuple[str, bool]:
    """(the checkpoint training started from, whether a LoRA adapter is trained on it)."""
    peft_config = getattr(model, "peft_config", None)
    if peft_config:
        return next(iter(peft_config.values())).base_model_name_or_path or "", True
    return getattr(getattr(model, "config", None), "_name_or_path", "") or "", False


def _metrics(log_history: list[dict]) -> dict[str, Any]:
    """The last logged value of every metric (training and evaluation)."""
    out: dict[str, Any] = {}
    for rec in log_history:
        out.update({k: v for k, v in rec.items() if isinstance(v, (int, float)) and not isinstance(v, bool)})
    return out


def run_card(trainer, model_name: str | None = None, tags: Sequence[str] = ()) -> ModelCard:
    """The model card of a training run: base model, method, λ / β / robust settings, the switch table, the
    data and its fingerprint, the last logged metrics and the resolved recipe (``run_config.yaml``)."""
    args = trainer.args
    loss = args.loss_summary()
    base, lora = _base_model(trainer.accelerator.unwrap_model(trainer.model))
    data = data_fingerprint(_dataset_folder(trainer))
    metrics = _metrics(trainer.state.log_history)
    is_hub_id = bool(base) and not os.path.isdir(base)
    card_data = ModelCardData(
        base_model=base if is_hub_id else None,  # the hub accepts repo ids only
        library_name="peft" if lora else "transformers",
        model_name=model_name or Path(args.output_dir).name,
        tags=sorted({*TAGS, args.method, *tags}),
    )
    settings = [
        ("method", loss["method"]),
        ("robust aggregation (Eq. 5)", loss["robust"] if args.method == "cavpref" else "none"),
        ("λ (y, v, a)", ", ".join(f"{loss['lambdas'][k]}" for k in ("y", "v", "a"))),
        ("β (y, v, a)", ", ".join(str(loss["beta"][k]) for k in ("y", "v", "a"))),
        ("β calibration", ", ".join(f"{k} {v}" for k, v in loss["beta_calibration"].items())),
        ("DPO β (method dpo)", args.beta),
        ("switch table (η, γ)", ", ".join(f"{t} {tuple(v)}" for t, v in loss["switches"].items())),
        ("sampler / reference", f"{loss['sampler']} / {loss['reference']}"),
        ("anchor response", args.anchor_response),
        ("learning rate, steps", f"{args.learning_rate}, {trainer.state.global_step}"),
    ]
    recipe_path = Path(args.output_dir) / "run_config.yaml"
    recipe = redact(recipe_path.read_text()) if recipe_path.is_file() else ""
    what = (
        f"A {'LoRA adapter on' if lora else 'fine-tune of'} `{base or '?'}` trained with cavpref's "
        f"`{args.method}` objective ({PAPER}). Load it like its base model "
        f"({'`peft.PeftModel.from_pretrained`' if lora else '`from_pretrained`'}), or make a full "
        "Qwen2.5-Omni checkpoint with `cavpref export` (docs/models.md)."
    )
    sections = [
        ("What this is", what),
        ("Loss settings", md_table(["setting", "value"], settings)),
        ("Training data", md_table(["key", "value"], sorted(data.items())) if data else "unknown"),
        ("Metrics (last logged values)", md_table(["metric", "value"], sorted(metrics.items()))),
        ("Recipe (resolved, as `run_config.yaml`)", f"```yaml\n{recipe}```" if recipe else ""),
    ]
    return build_card(card_data, card_data.model_name, sections)
