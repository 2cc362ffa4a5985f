"""The ladder's keys (``LadderConfig``), its methods and mixes, and the source run's quickstart keys: read by
``plan`` (which runs the stages) and ``report`` (which renders them), so neither imports the other."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from cavpref.apps.quickstart import METHOD_KEYS, QuickstartConfig
from cavpref.data import CLEAN_TASK, TASKS
from cavpref.eval.option_score import OPTION_SCORES
from cavpref.terms import CAVPREF_TERMS

# ladder method -> (cavpref train method, quickstart recipe overrides, label); β as the quickstart sets it
METHODS = {
    "ceiling": ("sft", {}, "Ceiling (SFT, perturbed + clean twins)"),
    "ceiling_rot": ("sft", {}, "Ceiling, every rotation"),
    "ceiling_weighted": ("sft", {}, "Ceiling, clean twins weighted"),
    "dpo": ("dpo", {}, "DPO"),
    "cavpref_norobust": ("cavpref_norobust", {}, "CAVPref w/o Robustness"),
    "cavpref": ("cavpref", {}, "CAVPref"),
    "cavpref_fixed_beta": ("cavpref_fixed_beta", {}, "CAVPref (fixed β)"),
    "cavpref_paper_anchor": ("cavpref", {"anchor_response": "chosen"}, "CAVPref (anchor = chosen)"),
    # issue 53: the remedies (docs/training.md "Remedies"), each with its paper's constant
    "cavpref_sft": (
        "cavpref",
        {"loss_type": [*CAVPREF_TERMS, "sft"], "loss_weights": [1.0, 1.0, 1.0, 1.0]},
        "CAVPref + NLL (RPO, α = 1)",
    ),
    "cavpref_ancpo": (  # the quickstart's cavpref_anchored: one definition
        "cavpref",
        METHOD_KEYS["cavpref_anchored"],
        "CAVPref + anchored preference (mDPO, δ = 0)",
    ),
    "cavpref_dpop": ("cavpref", {"dpop_lambda": 50.0}, "CAVPref + DPOP (λ = 50)"),
    "cavpref_apo": ("cavpref", {"loss_type": [*CAVPREF_TERMS, "apo_zero"]}, "CAVPref + APO-zero"),
    # run it on the clean_abstain_anchors mix: CLEAN rows carrying their twins' anchors
    "cavpref_clean_cond": (
        "cavpref",
        {"switch_table": {"CLEAN": [1, 1]}},
        "CAVPref, v / a terms on CLEAN too",
    ),
    "dpo_va": ("dpo", {"loss_type": ["sigmoid", "cavpref_v", "cavpref_a"]}, "DPO + CAVPref's v / a terms"),
}
CURVE_METHODS = tuple(m for m in METHODS if not m.startswith("ceiling"))
MIXES = {
    "paper": list(TASKS),
    "clean": [*TASKS, CLEAN_TASK],
    "clean_abstain": [*TASKS, CLEAN_TASK],
    # clean_abstain with every CLEAN row carrying its twins' anchor pairs (prep's clean_anchors)
    "clean_abstain_anchors": [*TASKS, CLEAN_TASK],
}


@dataclass
class LadderConfig:
    source: str = field(default="", metadata={"help": "a finished `cavpref quickstart` run (read only)"})
    out: str = field(default="", metadata={"help": "the ladder's folder (every stage writes below it)"})
    parts: list[str] = field(
        default_factory=lambda: ["start", "ceiling"],
        metadata={
            "help": "start | ceiling | ceiling_rot (the ceiling's rows under every CircularEval rotation) | "
            "ceiling_weighted (each clean twin --ceiling_clean_copies times) | curves | decisive (any of them, "
            "run in this order)"
        },
    )
    budgets: list[int] = field(
        default_factory=lambda: [120, 480, 960, 1920],
        metadata={"help": "optimizer steps at which every run is evaluated (multiples of save_every)"},
    )
    epochs: float = field(
        default=2.0, metadata={"help": "every run also trains to at least this many epochs of its own data"}
    )
    save_every: int = field(default=120, metadata={"help": "checkpoint spacing (steps)"})
    warmup_steps: int = field(
        default=6,
        metadata={"help": "linear warm-up, then a constant learning rate (the quickstart's 120//20)"},
    )
    ceiling_clean_copies: int = field(
        default=4,
        metadata={
            "help": "ceiling_weighted: each clean twin this many times per perturbed row, a cost on abstaining "
            "where the answer is wanted (the balanced ceiling abstains on a third of clean items; the cut its "
            "own training items want is worth about 4:1 in the odds of the answer letter, cavpref_lab/ladder/README.md)"
        },
    )
    methods: list[str] = field(
        default_factory=lambda: list(CURVE_METHODS),
        metadata={"help": f"curve methods: {list(CURVE_METHODS)}"},
    )
    mixes: list[str] = field(
        default_factory=lambda: list(MIXES),
        metadata={
            "help": "paper (the 9 tasks) | clean (+ CLEAN's rows: a wrong option rejected) | clean_abstain (+ "
            "CLEAN's rows with abstaining rejected, prep's default now: rows.MIX_CLEAN_REJECTED)"
        },
    )
    option_score: str = field(
        default="per_token",
        metadata={
            "help": "the protocol the tables and plots read (all three are recorded)",
            "choices": list(OPTION_SCORES),
        },
    )
    decisive_steps: list[int] = field(
        default_factory=list,
        metadata={"help": "budgets of the decisive table, one table each (none: not run)"},
    )
    decisive_seeds: list[int] = field(default_factory=lambda: [0, 1, 2], metadata={"help": "seeds"})
    decisive_methods: list[str] = field(
        default_factory=lambda: ["ceiling", *CURVE_METHODS],
        metadata={"help": "methods of the decisive table"},
    )
    decisive_mixes: list[str] = field(default_factory=lambda: list(MIXES), metadata={"help": "their mixes"})
    precompute_ref: bool = field(
        default=True,
        metadata={
            "help": "preference runs read the start's reference log-probs from one cache per mix, computed once "
            "(stage ref/<mix>), instead of a reference forward at every step"
        },
    )
    allow_recipe_change: bool = field(
        default=False,
        metadata={
            "help": "extend runs that an older version started even where a recipe key it writes has changed "
            "since (passed to cavpref train, which keeps the old run_config.yaml beside the new one)"
        },
    )
    worker: bool = field(default=False, metadata={"help": "a second process: takes stages, writes no report"})
    report_only: bool = field(default=False, metadata={"help": "write ladder.md / ladder.json / plots only"})

    def __post_init__(self):
        if not self.source or not self.out:
            raise ValueError("--source (a finished quickstart run) and --out are required")
        # a ladder_config.json written when the decisive table had one budget (0: none)
        if isinstance(self.decisive_steps, int):
            self.decisive_steps = [self.decisive_steps] if self.decisive_steps else []
        for name, given, known in (
            (
                "parts",
                self.parts,
                ("start", "ceiling", "ceiling_rot", "ceiling_weighted", "curves", "decisive"),
            ),
            ("methods", self.methods, CURVE_METHODS),
            ("mixes", self.mixes, MIXES),
            ("decisive_methods", self.decisive_methods, ("ceiling", *CURVE_METHODS)),
            ("decisive_mixes", self.decisive_mixes, MIXES),
        ):
            if unknown := sorted(set(given) - set(known)):
                raise ValueError(f"--{name}: unknown {unknown}; choose from {list(known)}")
        if self.ceiling_clean_copies < 1:
            raise ValueError(f"--ceiling_clean_copies {self.ceiling_clean_copies}: at least 1")
        if bad := [b for b in (*self.budgets, *self.decisive_steps) if b % self.save_every]:
            raise ValueError(
                f"--budgets / --decisive_steps {bad}: not multiples of --save_every {self.save_every}"
            )


def source_config(cfg: LadderConfig) -> QuickstartConfig:
    """The source run's quickstart keys, writing under the ladder and evaluating every test item. Keys this
    version no longer has are left out: the ladder reads only the training and evaluation keys, and the source's
    world, prep and start are read from its folders, never rebuilt."""
    keys = json.loads((Path(cfg.source) / "quickstart_config.json").read_text())
    known = {f.name for f in fields(QuickstartConfig)}
    return replace(
        QuickstartConfig(**{k: v for k, v in keys.items() if k in known}), out=cfg.out, eval_limit=0
    )
