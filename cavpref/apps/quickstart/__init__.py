"""``cavpref quickstart`` — the embedded default, end to end, on a CPU.

synthetic world -> tiny CLAP / CLIP scorers trained on its train clips -> AVTrustBench items + preference data
scored by them -> tiny Qwen2.5-Omni thinker -> a captions-only SFT on a second, caption-only world, then SFT
on the clean questions plus ground-truth captions of the train clips, encoders trained too (the paper's "zero-shot" starting model: a real AVLLM arrives pretrained, a
random one must first learn to see and hear) -> the four methods of Table 5 (SFT, DPO, CAVPref w/o Robustness,
CAVPref, β calibrated) and CAVPref with a fixed β from that checkpoint, same data, steps and seed, language model
only -> evaluation of all six on the test split (9 tasks + CLEAN, instruction setting, CircularEval and
vanilla) -> report.md with the Table-5 layout, CLEAN after training, categories, a plot.

One module per job:

* ``config`` — ``QuickstartConfig`` (``--help``: the user's keys; ``--help_all``: every key) and its presets
  (``default``, ``perceiving``, ``small``);
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
text — it cannot point at the letter, which the paper's generation protocol requires (measured:
cavpref_lab/science/README.md). ``--eval_mode generate`` runs that protocol.

β: the world's train clips train tiny CLAP / CLIP scorers (stage ``scorers``: ``cavpref model tiny-clap`` /
``tiny-clip``; held-out retrieval and AVSM(clean) > AVSM(perturbed) rates in docs/scoring.md), prep scores the
preference data with them, and CAVPref / CAVPref w/o Robustness calibrate β = 0.9·ΔS + 0.1 as the paper prints
it. SFT, DPO and a "CAVPref (fixed β)" row keep the fixed ``beta``, so the effect of calibration is one row
apart. ``--calibrate_beta false`` skips the scorers and fixes β for every method.
"""

from cavpref.apps.quickstart.config import (
    CALIBRATED,
    DEFAULT_METHODS,
    LABELS,
    METHOD_KEYS,
    METHODS,
    PRESETS,
    TRAIN_METHOD,
    QuickstartConfig,
)
from cavpref.apps.quickstart.data import (
    CAPTION_PROBES,
    WITHOUT,
    clip_captions,
    corpus,
    probe_clips,
    split_clips,
    start_data,
)
from cavpref.apps.quickstart.pipeline import (
    eval_stage,
    main,
    run,
    stage_folders,
    start_stages,
    train_stage,
    write_config,
)
from cavpref.apps.quickstart.recipes import recipe, write_recipe
from cavpref.apps.quickstart.report import (
    category_table,
    clean_chance,
    plot_methods,
    task_accuracy,
    write_report,
)
from cavpref.apps.quickstart.stages import Stage, Stages, say

# the stages' folders, the start's stages and the saved config are public: the lab's science runs and
# benchmarks (cavpref_lab) build on them and import only these names
__all__ = [
    "CALIBRATED",
    "CAPTION_PROBES",
    "DEFAULT_METHODS",
    "LABELS",
    "METHODS",
    "METHOD_KEYS",
    "PRESETS",
    "TRAIN_METHOD",
    "WITHOUT",
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
    "probe_clips",
    "recipe",
    "run",
    "say",
    "split_clips",
    "stage_folders",
    "start_data",
    "start_stages",
    "task_accuracy",
    "train_stage",
    "write_config",
    "write_recipe",
    "write_report",
]
