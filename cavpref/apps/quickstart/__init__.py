"""``cavpref quickstart`` — the embedded default, end to end, on a CPU.

synthetic world -> AVTrustBench items + preference data -> tiny Qwen2.5-Omni thinker -> SFT on the clean
questions plus ground-truth captions of the train clips, encoders trained too (the paper's "zero-shot"
starting model: a real AVLLM arrives pretrained, a random one must first learn to see and hear) -> the four
methods of Table 5 (SFT, DPO, CAVPref w/o Robustness, CAVPref) from that checkpoint, same data, steps and
seed, language model only -> evaluation of all five on the test split (9 tasks + CLEAN, instruction setting,
CircularEval and vanilla) -> report.md with the Table-5 layout, CLEAN after training, categories, a plot.

One module per job:

* ``config`` — ``QuickstartConfig`` (every knob; ``--help`` lists them) and the full / ``--small`` defaults;
* ``stages`` — the resumable stage runner: every stage writes into its own folder under ``--out`` and is
  skipped when it has finished before, so a second run only redoes what is missing;
* ``data`` — the starting model's SFT rows (every CircularEval view of CLEAN's train items, from prep's
  ``circular_sft_rows``), ground-truth clip captions, the clip split; the preference rows come rotated from
  prep itself (``rotate_options``), so no letter is special in training;
* ``recipes`` — the ``cavpref train`` recipes, written next to the checkpoints (``recipes/*.yaml``): the
  quickstart runs the same ``cavpref train`` a user would;
* ``report`` — ``report.md`` through the evaluation's own report helpers;
* ``pipeline`` — the stages in order, ``run`` and the command's ``main``.

Answer mode: option log-likelihood by default. The tiny thinker knows the answers (CLEAN likelihood accuracy
far above chance) but in free generation writes one letter for nearly every question and then the right
text — it cannot point at the letter, which the paper's generation protocol requires (measured; README
"Results on the embedded default"). ``--eval_mode generate`` runs that protocol.

β: CAVPref calibrates β from CLAP / AVSM similarity deltas, which need real CLAP / CLIP checkpoints —
nothing is downloaded here, and tiny random scorers would make β noise. The quickstart therefore fixes
β (``beta``) for every method, so DPO and CAVPref differ only in the anchor terms and the aggregation;
``--calibrate_beta`` scores the data with tiny offline scorers to exercise that path instead.
"""

from cavpref.apps.quickstart.config import DEFAULTS, LABELS, METHODS, QuickstartConfig
from cavpref.apps.quickstart.data import (
    clip_captions,
    corpus,
    split_clips,
    start_data,
)
from cavpref.apps.quickstart.pipeline import eval_stage, main, run, train_stage
from cavpref.apps.quickstart.recipes import recipe, write_recipe
from cavpref.apps.quickstart.report import (
    category_table,
    clean_chance,
    plot_methods,
    task_accuracy,
    write_report,
)
from cavpref.apps.quickstart.stages import Stage, Stages, say

__all__ = [
    "DEFAULTS",
    "LABELS",
    "METHODS",
    "QuickstartConfig",
    "Stage",
    "Stages",
    "category_table",
    "clean_chance",
    "clip_captions",
    "corpus",
    "eval_stage",
    "main",
    "plot_methods",
    "recipe",
    "run",
    "say",
    "split_clips",
    "start_data",
    "task_accuracy",
    "train_stage",
    "write_recipe",
    "write_report",
]
