"""Training configuration: one dataclass extending TRL's ``DPOConfig``.

Every loss knob of the paper is a field here, so a recipe key, a YAML value and a command-line flag
(``--lambda_a 0.8``) are the same thing, parsed by TRL's ``TrlParser`` (``HfArgumentParser``) — no hand
written argparse. The switch table (which task gets the visual / audio term, paper Eq. 6) is data too:
a variant name plus optional per-task overrides.
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass, field
from typing import Any, ClassVar

from trl import DPOConfig

from cavpref import task_registry
from cavpref.collator import ANCHORS
from cavpref.cpu import CPU_ISAS
from cavpref.loss import BETA_DELTAS, PAPER_LAMBDAS, ROBUST_MODES, switches_for
from cavpref.output_dir import OutputArguments
from cavpref.terms import Term, anchor_components, resolve_terms

# The four rows of the paper's Table 5.
METHODS = ("sft", "dpo", "cavpref_norobust", "cavpref")
SAMPLERS = ("mixed", "task_homogeneous")
SWITCH_VARIANTS = ("paper", "released")
REFERENCES = ("auto", "model", "peft_disabled", "precomputed")
ROBUST_NORMALIZERS = ("exact", "micro_batch")

# DPOConfig options and their unused value, with why a method cannot use them: accepting another value silently
# would train something other than what the config says. ``method: dpo`` runs TRL's own loss code, so only the
# options that need per-token log-probs (the model I/O returns per-row sums) are refused there.
_PER_TOKEN = "needs per-token log-probs, and the model I/O returns each row's summed log-prob"
_DPO_OPTIONS = {
    "loss_type": ["sigmoid"],
    "loss_weights": None,
    "label_smoothing": 0.0,
    "f_divergence_type": "reverse_kl",
    "ld_alpha": None,
    "use_weighting": False,
    "padding_free": False,
}
_TERM_OPTIONS = ("loss_type", "loss_weights")  # the objective's term list, every method (cavpref/terms.py)
_NOT_FOR_DPO = {
    "ld_alpha": f"LD-DPO's length weighting {_PER_TOKEN}",
    "use_weighting": f"WPO's weights {_PER_TOKEN}",
    "padding_free": "rows are packed by the model I/O itself (shared_prefix), not by TRL's collator",
}


@dataclass
class CAVPrefConfig(DPOConfig, OutputArguments):
    r"""``DPOConfig`` plus the CAVPref loss, switch table, sampler and media policy.

    ``method`` picks the objective (all on the same data and collator, so the baselines are comparable):
    ``sft`` (NLL of the chosen response under the presented media), ``dpo`` (TRL's DPO with fixed ``beta``, by
    TRL's own loss code: sigmoid by default, or any of its ``loss_type`` variants, combined with ``loss_weights``,
    with ``label_smoothing`` / ``f_divergence_type``), ``cavpref_norobust`` (Eq. 1-3 + 6, plain mean) and
    ``cavpref`` (with Eq. 5 aggregation).

    β: ``beta_y`` / ``beta_v`` / ``beta_a`` left unset (``None``) means calibrated per sample,
    β = ``beta_scale`` · ΔS_norm + ``beta_offset`` over the global batch (paper: 0.9, 0.1), from the
    ``clap_delta`` / ``avsm_delta_v`` / ``avsm_delta_a`` columns; a number fixes that component's β.
    """

    num_threads: int = field(
        default=0,
        metadata={
            "help": "torch intra-op CPU threads, pinned at the start of the run; 0 = torch's own choice "
            "(OMP_NUM_THREADS, else the CPUs available). Set 1 (with cpu_isa avx2) for bit-identical CPU runs: "
            "the thread count changes the weights (the tiny and quickstart recipes do). See docs/reproducibility.md"
        },
    )
    cpu_isa: str = field(
        default="native",
        metadata={
            "help": "CPU code of torch's kernels, oneDNN and MKL: native lets each pick the CPU's best; avx2 caps "
            "all three at AVX2, so machines with and without AVX-512 train the same bits (x86-64 only; the tiny "
            "and quickstart recipes set it). See docs/reproducibility.md",
            "choices": list(CPU_ISAS),
        },
    )
    encoder_learning_rate: float | None = field(
        default=None,
        metadata={
            "help": "learning rate of the trained vision / audio encoders and projectors (freeze_vision / "
            "freeze_audio false, train_projectors true); unset = learning_rate"
        },
    )
    # Defaults a multimodal preference run needs: the audio/video columns must reach the collator.
    remove_unused_columns: bool = field(
        default=False,
        metadata={"help": "Kept False: the collator needs the media / anchor columns."},
    )

    # TRL defaults gradient checkpointing on through the deprecated name; keep the default, new name.
    gradient_checkpointing: bool | None = field(
        default=None, metadata={"help": "Deprecated alias of activation_checkpointing"}
    )
    activation_checkpointing: bool | None = field(
        default=True, metadata={"help": "Recompute activations in backward (saves memory on large models)"}
    )

    method: str = field(
        default="cavpref",
        metadata={"help": "sft | dpo | cavpref_norobust | cavpref", "choices": list(METHODS)},
    )
    robust: str = field(
        default="paper",
        metadata={
            "help": "Aggregation of Eq. 5 for method=cavpref: paper (soft-min, Dr. DPO form) | worst_case "
            "(soft-max, the Eq. 4 prose) | none",
            "choices": list(ROBUST_MODES),
        },
    )
    lambda_y: float = field(default=PAPER_LAMBDAS["y"], metadata={"help": "λ_y of Eq. 5"})
    lambda_v: float = field(default=PAPER_LAMBDAS["v"], metadata={"help": "λ_V of Eq. 5"})
    lambda_a: float = field(default=PAPER_LAMBDAS["a"], metadata={"help": "λ_A of Eq. 5"})
    beta_y: float | None = field(
        default=None, metadata={"help": "Fixed β_y; unset = calibrated from clap_delta"}
    )
    beta_v: float | None = field(
        default=None, metadata={"help": "Fixed β_V; unset = calibrated from avsm_delta_v"}
    )
    beta_a: float | None = field(
        default=None, metadata={"help": "Fixed β_A; unset = calibrated from avsm_delta_a"}
    )
    beta_scale: float = field(default=0.9, metadata={"help": "β = beta_scale * ΔS_norm + beta_offset"})
    beta_offset: float = field(default=0.1, metadata={"help": "β = beta_scale * ΔS_norm + beta_offset"})
    beta_delta: str = field(
        default="abs",
        metadata={
            "help": "What β's min-max normalises: abs (|ΔS|: small β for semantically close pairs, the paper's "
            "stated intent) | signed (ΔS as stored: the smallest β goes to pairs whose rejected answer fits "
            "the media better). See docs/training.md",
            "choices": list(BETA_DELTAS),
        },
    )
    robust_normalizer: str = field(
        default="exact",
        metadata={
            "help": "Eq. 5's log-mean-exp normaliser over the optimizer batch: exact (a no-grad forward over the "
            "step's micro-batches first; exact at every batch shape) | micro_batch (each micro-batch's own "
            "normaliser weighted by its share of the step: no extra forward, exact only when "
            "gradient_accumulation_steps = 1)",
            "choices": list(ROBUST_NORMALIZERS),
        },
    )
    dpop_lambda: float = field(
        default=0.0,
        metadata={
            "help": "DPOP (Pal et al. 2024, arXiv:2402.13228): inside each CAVPref term's sigmoid, subtract "
            "dpop_lambda · max(0, log π_ref(w) − log π(w)), a penalty on the chosen row falling below the "
            "reference; 0 = off (the paper's CAVPref). docs/training.md, Remedies"
        },
    )
    ancpo_delta: float = field(
        default=0.0,
        metadata={
            "help": "δ of the ancpo_y / ancpo_v / ancpo_a terms (mDPO's anchored preference, arXiv:2406.11839): "
            "−log σ(β (log π(w) − log π_ref(w)) − δ); mDPO uses 0. docs/training.md, Remedies"
        },
    )
    min_component_samples: int = field(
        default=4,
        metadata={
            "help": "Warn (once) and count (count/degenerate/<component>) when a loss component has fewer samples "
            "than this in an optimizer batch: β's min-max and the log-mean-exp mean little there"
        },
    )
    anchor_response: str = field(
        default="original",
        metadata={
            "help": "Response of the visual / audio anchor rows: original (the answer the clean media support, "
            "mDPO-style; the project's default) | chosen (the sample's chosen response under clean vs perturbed "
            "media, as the paper prints Eq. 2-3). docs/training.md, Anchors",
            "choices": list(ANCHORS),
        },
    )
    switch_variant: str = field(
        default="paper",
        metadata={
            "help": "Eq. 6 switch table: paper | released (γ=1 also for COT-Swap, as the released code)",
            "choices": list(SWITCH_VARIANTS),
        },
    )
    switch_table: dict | str | None = field(
        default=None,
        metadata={
            "help": "Per-task overrides of (η, γ), e.g. '{\"CAT\": [0, 1]}'. Unset: `cavpref train` uses the "
            "table prep wrote to manifest.json next to train_dataset (switch_table.<switch_variant>), else the "
            "declared tasks' defaults"
        },
    )
    sampler: str = field(
        default="mixed",
        metadata={
            "help": "mixed (switches masked per sample) | task_homogeneous (one task per global batch, "
            "the paper's regime)",
            "choices": list(SAMPLERS),
        },
    )
    reference: str = field(
        default="auto",
        metadata={
            "help": "auto | model (separate frozen copy) | peft_disabled (LoRA adapter off) | precomputed "
            "(same as precompute_ref_log_probs=True)",
            "choices": list(REFERENCES),
        },
    )
    ref_cache_dir: str | None = field(
        default=None,
        metadata={
            "help": "Where precomputed reference log-probs are cached (default: output_dir/ref_logps); an entry is keyed "
            "by the data, the reference weights, the collator's and the model I/O's settings"
        },
    )
    # Where media live; which frames are decoded is the model's business (cavpref.models.config.AVModelArguments).
    media_root: str = field(default=".", metadata={"help": "Data root that MediaSpec paths are relative to"})
    media_cache_size: int = field(
        default=0,
        metadata={
            "help": "Decoded clips the collator keeps in memory (LRU; 0 = decode every time). The same clip "
            "recurs across tasks, anchors and epochs; a 10-s clip at 8 frames of 56x56 is ~0.7 MB"
        },
    )
    save_merged: bool = field(
        default=True,
        metadata={
            "help": "After a LoRA run, also write the merged model to output_dir/merged (a plain HF "
            "checkpoint that eval and from_pretrained load)"
        },
    )
    missing_stream: str = field(
        default="allow",
        metadata={
            "help": "A stream a row's media keeps but its file lacks (no audio track): allow (train without it, "
            "counted in missing_streams.json) | error (a bad row: raised, or skipped with skip_bad_rows)"
        },
    )
    allow_recipe_change: bool = field(
        default=False,
        metadata={
            "help": "Resume even if a key that defines the run (every key but how long, how often, where to log; "
            "docs/training.md) differs from the run's run_config.yaml (the old config is kept as "
            "run_config.before_resume.N.yaml)"
        },
    )
    skip_bad_rows: bool = field(
        default=False,
        metadata={
            "help": "Skip (and count) rows with missing fields, empty responses, undecodable media or "
            "non-finite log-probs instead of raising"
        },
    )

    _VALID_DICT_FIELDS = DPOConfig._VALID_DICT_FIELDS + ["switch_table"]
    # TrainingArguments' keys every recipe sets, listed by ``cavpref train --help`` (the rest: --help_all)
    help_inherited: ClassVar[tuple[str, ...]] = (
        "output_dir",
        "learning_rate",
        "max_steps",
        "num_train_epochs",
        "per_device_train_batch_size",
        "gradient_accumulation_steps",
        "lr_scheduler_type",
        "warmup_steps",
        "logging_steps",
        "save_strategy",
        "save_steps",
        "save_total_limit",
        "resume_from_checkpoint",
        "seed",
        "bf16",
        "use_cpu",
        "report_to",
    )
    # Our keys that may change on resume (cavpref/resume_guard.py: every other key defines the run), with why.
    MAY_CHANGE_ON_RESUME: ClassVar[dict[str, str]] = {
        "allow_recipe_change": "the resume's own switch",
        "min_component_samples": "only when a warning is shown",
        "save_merged": "an extra output after training",
        "ref_cache_dir": "where the cache lives (an entry's key holds everything its values depend on)",
        "media_cache_size": "decoded clips kept in memory: the same values (tests/trainer/test_trainer.py)",
        "overwrite_output_dir": "this invocation's permission to write into the folder (cavpref.output_dir)",
    }

    def __post_init__(self):
        if self.remove_unused_columns:
            warnings.warn(
                "CAVPrefConfig: remove_unused_columns=True would drop the media columns; forcing False.",
                stacklevel=2,
            )
            self.remove_unused_columns = False
        super().__post_init__()
        if isinstance(self.switch_table, str):
            self.switch_table = json.loads(self.switch_table) if self.switch_table.strip() else None
        _check_choice("method", self.method, METHODS)
        _check_choice("robust", self.robust, ROBUST_MODES)
        _check_choice("switch_variant", self.switch_variant, SWITCH_VARIANTS)
        _check_choice("anchor_response", self.anchor_response, ANCHORS)
        _check_choice("sampler", self.sampler, SAMPLERS)
        _check_choice("reference", self.reference, REFERENCES)
        _check_choice("missing_stream", self.missing_stream, ("allow", "error"))
        _check_choice("beta_delta", self.beta_delta, BETA_DELTAS)
        _check_choice("robust_normalizer", self.robust_normalizer, ROBUST_NORMALIZERS)
        for name, unused in _DPO_OPTIONS.items():
            if getattr(self, name) == unused:
                continue
            if name in _NOT_FOR_DPO:
                why = _NOT_FOR_DPO[name]
            elif self.method == "dpo" or name in _TERM_OPTIONS:
                continue  # TRL's loss code (cavpref/trainer/trl_dpo.py); the term list (cavpref/terms.py)
            else:
                why = (
                    f"method {self.method} is sigmoid DPO per component (Eq. 1-3) with Eq. 5's aggregation, "
                    "cavpref/loss.py; TRL's DPO variants are method: dpo"
                )
            raise ValueError(
                f"CAVPrefConfig.{name}={getattr(self, name)!r}: this DPOConfig option is not implemented by the "
                f"CAVPref loss: {why}; leave it at {unused!r}"
            )
        if self.max_steps == 0:  # transformers ran one step and saved
            raise ValueError(
                "CAVPrefConfig.max_steps 0 trains nothing: give a number of steps, or -1 (the default) to train "
                "num_train_epochs"
            )
        for name, domain in LOSS_DOMAINS.items():
            _check_domain(name, getattr(self, name), domain)
        for i, weight in enumerate(self.loss_weights or ()):
            _check_domain(f"loss_weights[{i}]", weight, ">= 0")
        terms = self.terms  # validates loss_type / loss_weights against the method
        _check_domain("dpop_lambda", self.dpop_lambda, ">= 0")
        _check_domain(
            "ancpo_delta", abs(self.ancpo_delta) if _finite(self.ancpo_delta) else self.ancpo_delta, ">= 0"
        )
        if self.dpop_lambda and not any(t.kind == "cavpref" for t in terms):
            raise ValueError(
                f"CAVPrefConfig.dpop_lambda={self.dpop_lambda}: DPOP's penalty sits inside CAVPref's terms, and "
                f"loss_type {[t.name for t in terms]} has none (add cavpref_y, or leave dpop_lambda at 0)"
            )
        if self.reference == "precomputed":
            self.precompute_ref_log_probs = True
        elif self.precompute_ref_log_probs and self.reference == "auto":
            self.reference = "precomputed"
        elif self.precompute_ref_log_probs:
            raise ValueError(
                f"CAVPrefConfig: precompute_ref_log_probs=True conflicts with reference={self.reference!r}"
            )
        self.switches()  # validates switch_table

    # ------------------------------------------------------------------ derived views

    @property
    def robust_mode(self) -> str:
        """The aggregation actually used: only ``method=cavpref`` is robust."""
        return self.robust if self.method == "cavpref" else "none"

    @property
    def lambdas(self) -> dict[str, float]:
        return {"y": self.lambda_y, "v": self.lambda_v, "a": self.lambda_a}

    @property
    def fixed_betas(self) -> dict[str, float | None]:
        """β per component; ``None`` = calibrated. DPO uses the stock fixed ``beta`` for y."""
        if self.method == "dpo":
            return {"y": self.beta, "v": self.beta_v, "a": self.beta_a}
        return {"y": self.beta_y, "v": self.beta_v, "a": self.beta_a}

    @property
    def terms(self) -> tuple[Term, ...]:
        """The objective's weighted terms (``cavpref.terms``): ``loss_type`` / ``loss_weights`` read for ``method``."""
        return resolve_terms(self.method, self.loss_type, self.loss_weights)

    @property
    def row_method(self) -> str:
        """The rows a sample needs (``collator.needed_slots``): sft (the chosen row) | dpo (the y pair) | cavpref
        (and the anchors some term reads)."""
        if self.method == "sft":
            return "sft"
        return "cavpref" if anchor_components(self.terms) else "dpo"

    def switches(self) -> dict[str, tuple[int, int]]:
        """(η, γ) for every task; a switch is on only where a term of the objective reads that anchor (SFT and
        plain DPO: all zeros)."""
        table = _parse_switch_table(self.switch_table)
        used = anchor_components(self.terms) if self.method != "sft" else set()
        out = {}
        for t in task_registry.task_names():
            eta, gamma = switches_for(t, self.switch_variant, table) if used else (0, 0)
            out[t] = (eta if "v" in used else 0, gamma if "a" in used else 0)
        return out

    def loss_summary(self) -> dict[str, Any]:
        """The resolved loss settings, written next to the run's config for the record."""
        return {
            "method": self.method,
            "terms": {t.name: t.weight for t in self.terms},
            **({"dpop_lambda": self.dpop_lambda} if self.dpop_lambda else {}),
            **({"ancpo_delta": self.ancpo_delta} if any(t.kind == "ancpo" for t in self.terms) else {}),
            "robust": self.robust_mode,
            "lambdas": self.lambdas,
            "beta": {k: ("calibrated" if v is None else v) for k, v in self.fixed_betas.items()},
            "beta_calibration": {
                "scale": self.beta_scale,
                "offset": self.beta_offset,
                "delta": self.beta_delta,
            },
            "robust_normalizer": self.robust_normalizer,
            "switches": {t: list(s) for t, s in self.switches().items()},
            "sampler": self.sampler,
            "reference": self.reference,
            **({"dpo": {name: getattr(self, name) for name in _DPO_OPTIONS}} if self.method == "dpo" else {}),
        }


# The value domain of every numeric loss key (issue 40 #12): NaN, ±inf and out-of-domain values are refused
# before any data is read. DPO's beta < 0 silently learned to prefer the rejected answers (the logged margin
# stayed positive), 0 learns nothing, NaN blamed every data row; lambda inf — the plain mean only as a
# limit — made the loss NaN, logged as 0.0.
LOSS_DOMAINS = {
    "beta": "> 0",
    "beta_y": "> 0 or unset (calibrated)",
    "beta_v": "> 0 or unset (calibrated)",
    "beta_a": "> 0 or unset (calibrated)",
    "beta_scale": "> 0",
    "beta_offset": ">= 0",
    "lambda_y": "> 0",
    "lambda_v": "> 0",
    "lambda_a": "> 0",
    "label_smoothing": ">= 0",
}
_HINTS = {
    "lambda": "; the plain mean (the lambda -> inf limit) is method: cavpref_norobust",
}


def _check_domain(name: str, value, domain: str) -> None:
    """``value`` finite and in ``domain`` (``> 0`` | ``>= 0``, optionally ``or unset``), else one line
    naming the key."""
    if value is None and "unset" in domain:
        return
    ok = isinstance(value, (int, float)) and math.isfinite(value)
    ok = ok and (value > 0 if domain.startswith("> 0") else value >= 0)
    if not ok:
        hint = next((h for prefix, h in _HINTS.items() if name.startswith(prefix)), "")
        raise ValueError(f"CAVPrefConfig.{name} must be finite and {domain}, got {value!r}{hint}")


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _check_choice(name: str, value: str, choices) -> None:
    if value not in choices:
        raise ValueError(f"CAVPrefConfig.{name}: {value!r} is not one of {list(choices)}")


def _parse_switch_table(table: dict | None) -> dict[str, tuple[int, int]] | None:
    if not table:
        return None
    out = {}
    for task, value in table.items():
        if not task_registry.is_task(task):
            raise ValueError(
                f"CAVPrefConfig.switch_table: unknown task {task!r} (expected one of "
                f"{task_registry.task_names()}; a new task is declared by its data_prep module or by the "
                "prep manifest's task table)"
            )
        if isinstance(value, dict):
            value = (value.get("eta", 0), value.get("gamma", 0))
        if len(value) != 2 or any(int(v) not in (0, 1) or float(v) != int(v) for v in value):
            raise ValueError(
                f"CAVPrefConfig.switch_table[{task!r}]: expected [eta, gamma] with 0/1 values, got {value}"
            )
        out[task] = (int(value[0]), int(value[1]))
    return out
