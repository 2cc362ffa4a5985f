"""``cavpref quickstart`` — the embedded default, end to end, on a CPU.

synthetic world -> AVTrustBench items + preference data -> tiny Qwen2.5-Omni thinker -> SFT on the clean
questions plus ground-truth captions of the train clips, encoders trained too (the paper's "zero-shot"
starting model: a real AVLLM arrives pretrained, a random one must first learn to see and hear) -> the four
methods of Table 5 (SFT, DPO, CAVPref w/o Robustness, CAVPref) from that checkpoint, same data, steps and
seed, language model only -> evaluation of all five on the test split (9 tasks + CLEAN, instruction setting,
CircularEval and vanilla) -> report.md with the Table-5 layout, CLEAN after training, categories, a plot.

Training rows are shown under CircularEval rotations (``rotated_rows``, ``_rotated_preferences``), so no
letter is special in training. Answer mode: option log-likelihood by default. The tiny thinker knows the
answers (CLEAN likelihood accuracy far above chance) but in free generation writes one letter for nearly every
question and then the right text — it cannot point at the letter, which the paper's generation protocol
requires (measured; README "Results on the embedded default"). ``--eval_mode generate`` runs that protocol.

Every stage writes into its own folder under ``--out`` and is skipped when it has finished before, so a
second run only redoes what is missing. The recipes the stage trains with are written next to the
checkpoints (``recipes/*.yaml``): the quickstart runs the same ``cavpref train`` a user would.

β: CAVPref calibrates β from CLAP / AVSM similarity deltas, which need real CLAP / CLIP checkpoints —
nothing is downloaded here, and tiny random scorers would make β noise. The quickstart therefore fixes
β (``beta``) for every method, so DPO and CAVPref differ only in the anchor terms and the aggregation;
``--calibrate_beta`` scores the data with tiny offline scorers to exercise that path instead.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml

from cavpref.data import CLEAN_TASK, NONE_OF_THE_ABOVE, TASKS

METHODS = ("sft", "dpo", "cavpref_norobust", "cavpref")
LABELS = {"start": "ZS (start)", "sft": "SFT", "dpo": "DPO", "cavpref_norobust": "CAVPref w/o Robustness",
          "cavpref": "CAVPref"}


# Full-size defaults and the --small (CI pipeline check) ones, for every field left unset (None).
DEFAULTS = {
    "num_clips": (96, 12), "hidden_size": (128, 32), "num_hidden_layers": (4, 1), "num_attention_heads": (4, 2),
    "num_key_value_heads": (2, 1), "intermediate_size": (384, 64), "vision_hidden_size": (64, 32),
    "vision_depth": (2, 1), "audio_d_model": (64, 32), "audio_layers": (2, 1), "num_frames": (8, 4),
    "sft_steps": (2000, 6), "pref_steps": (120, 3), "eval_limit": (40, 3),
}


@dataclass
class QuickstartConfig:
    """Every knob of the run. Fields left at None take the full default or, with ``--small``, the CI one
    (``DEFAULTS``): --small checks the pipeline in about a minute, it says nothing about the science."""

    out: str = field(default="runs/quickstart", metadata={"help": "run folder (every stage writes below it)"})
    small: bool = field(default=False, metadata={"help": "a one-minute pipeline check (CI): tiny world, few steps"})
    seed: int = field(default=0, metadata={"help": "seed of the world, the splits, the model and the training"})
    num_clips: int | None = field(default=None, metadata={"help": "clips per source (default 96; --small 12)"})
    # model
    hidden_size: int | None = None
    num_hidden_layers: int | None = None
    num_attention_heads: int | None = None
    num_key_value_heads: int | None = None
    intermediate_size: int | None = None
    vision_hidden_size: int | None = None
    vision_depth: int | None = None
    audio_d_model: int | None = None
    audio_layers: int | None = None
    vocab_size: int = field(default=1500, metadata={"help": "BPE vocabulary, trained on the world's own text"})
    num_frames: int | None = None
    frame_size: int = 56
    # training
    sft_steps: int | None = field(default=None, metadata={"help": "steps of the starting model's SFT"})
    pref_steps: int | None = field(default=None, metadata={"help": "steps of each Table-5 method"})
    batch_size: int = 8
    sft_learning_rate: float = 5e-4
    pref_learning_rate: float = 2e-4
    beta: float = 0.1
    calibrate_beta: bool = False
    methods: list[str] = field(default_factory=lambda: list(METHODS))
    # evaluation
    eval_limit: int | None = field(default=None, metadata={"help": "items per task and setting (default 40; "
                                                                    "--small 3; 0 = all)"})
    eval_mode: str = field(default="likelihood", metadata={"help": "likelihood (option log-likelihood) | generate "
                                                                   "(the paper's protocol; see module doc)"})

    def __post_init__(self):
        unknown = sorted(set(self.methods) - set(METHODS))
        if unknown:
            raise ValueError(f"--methods: unknown {unknown}; choose from {list(METHODS)}")
        if self.eval_mode not in ("likelihood", "generate"):  # checked now, not after the training stages
            raise ValueError(f"--eval_mode must be likelihood or generate, got {self.eval_mode!r}")
        for name, (full, small) in DEFAULTS.items():
            if getattr(self, name) is None:
                setattr(self, name, small if self.small else full)


class Stage:
    """A folder with a ``.done.json`` marker: a finished stage is reused, an unfinished one redone."""

    def __init__(self, root: Path, name: str):
        self.root, self.name, self.dir = root, name, root / name
        self.marker = self.dir / ".done.json"

    @property
    def done(self) -> bool:
        return self.marker.exists()

    def finish(self, **info: Any) -> None:
        self.marker.write_text(json.dumps(info, indent=1, sort_keys=True))

    def info(self) -> dict:
        return json.loads(self.marker.read_text())


def _say(msg: str) -> None:
    print(f"[quickstart] {msg}", flush=True)


class Stages:
    """Runs named stages under one root, reusing finished ones and timing the rest."""

    def __init__(self, cfg: QuickstartConfig, root: Path):
        self.cfg, self.root, self.timings = cfg, root, {}

    def __call__(self, name: str, fn, *args, **kwargs) -> Stage:
        st = Stage(self.root, name)
        if st.done:
            _say(f"{name}: done before, reused ({st.dir})")
            return st
        _say(f"{name}: running ...")
        t0 = time.perf_counter()
        fn(self.cfg, st, *args, **kwargs)
        self.timings[name] = time.perf_counter() - t0
        _say(f"{name}: finished in {self.timings[name]:.1f} s")
        return st


def _world(cfg: QuickstartConfig, stage: Stage) -> None:
    from cavpref.data_prep.synthetic import WorldConfig, generate_world

    manifest = generate_world(WorldConfig(out=str(stage.dir), seed=cfg.seed, num_clips=cfg.num_clips))
    stage.finish(files=manifest.get("files", {}) and len(manifest["files"]))


def _prep(cfg: QuickstartConfig, stage: Stage, world: Path) -> None:
    from cavpref.data_prep.build import PrepConfig, build

    stats = build(PrepConfig(output_dir=str(stage.dir), world=str(world), tasks=[*TASKS, CLEAN_TASK],
                             seed=cfg.seed, split_seed=cfg.seed, score=cfg.calibrate_beta))
    stage.finish(stats_file=str(stage.dir / "stats.json"), items=stats.get("items"))


def _corpus(data: Path) -> list[str]:
    """The training split's own text (prompts, chosen and rejected answers): the tiny tokenizer learns whole
    words for it, so an answer is a few tokens and copying an option's text is a short, learnable step."""
    from datasets import load_from_disk

    rows = load_from_disk(str(data / "preferences"))["train"]
    return sorted({t for col in ("prompt", "chosen", "rejected") for t in rows[col] if t})


SLOT_ORDER = {"left": 0, "middle": 1, "right": 2}


def _name(entity: dict) -> str:
    return str(entity["name"]).replace("_", " ").capitalize()


def clip_captions(clip: dict) -> list[tuple[str, str]]:
    """(prompt, response) pairs that describe one clip from the world's ground truth: what is seen (left to
    right), what is heard (by onset) and who is sounding where. They stand in for the audio-visual
    pretraining a real AVLLM has before the paper's "zero-shot" evaluation: without them a randomly
    initialised thinker learns the clean questions' text priors and ignores both streams (measured)."""
    entities = clip.get("instruments") or clip.get("sources") or []
    seen = sorted((e for e in entities if e.get("visible") and e.get("slot")), key=lambda e: SLOT_ORDER[e["slot"]])
    heard = sorted((e for e in entities if e.get("sounding")),
                   key=lambda e: (e["first_onset"], SLOT_ORDER.get(e.get("slot"), 3)))
    def place(e: dict) -> str:
        if not (e.get("visible") and e.get("slot")):
            return "off screen"
        return "in the middle" if e["slot"] == "middle" else f"on the {e['slot']}"

    where = [f"{_name(e)} {place(e)}" for e in heard]
    return [("What do you see, from left to right?", ", ".join(_name(e) for e in seen) or "Nothing"),
            ("What do you hear, in order of onset?", ", ".join(_name(e) for e in heard) or "Nothing"),
            ("Which objects are sounding, and where?", ", ".join(where) or "Nothing")]


def rotated_view(item, k: int) -> tuple[dict[str, str], dict[str, str], str]:
    """Pass ``k`` of CircularEval for one item, exactly as the evaluator shows it: the rotated options, the
    map old letter -> new letter, and the prompt ("None of the above" rotates too, as in the evaluation)."""
    from cavpref.eval.avtrustbench import format_prompt
    from cavpref.eval.circular import rotate

    options, new_of = rotate(item.options, k)
    abstain = None if item.abstain_letter is None else new_of[item.abstain_letter]
    return options, new_of, format_prompt(item, options, abstain)


def rotated_rows(items, columns: list[str]) -> list[dict]:
    """One SFT row per CircularEval view of every item, the chosen response naming the correct option at its
    new letter.

    Without it the starting model only ever sees "None of the above" last and the answers at their drawn
    letters, learns letter priors, and fails the rotations: CLEAN CircularEval was 0 % even by option
    likelihood (78.8 % vanilla); with it, 70.6 % circular / 78.1 % vanilla on all 146 CLEAN test items."""
    from cavpref.eval.circular import n_passes

    rows = []
    for item in items:
        for k in range(n_passes(item.options)):
            options, new_of, prompt = rotated_view(item, k)
            answer = new_of[item.answer]
            wrong = next(x for x in options if x != answer and options[x] != NONE_OF_THE_ABOVE)
            row = {name: None for name in columns}
            row.update(id=f"{item.id}:rot{k}", task=item.task, source=item.source, category=item.category,
                       prompt=prompt, media=item.media, chosen=f"{answer}. {options[answer]}",
                       rejected=f"{wrong}. {options[wrong]}", source_ids=list(item.source_ids))
            rows.append(row)
    return rows


def rotate_response(response: str | None, new_of: dict[str, str]) -> str | None:
    """A response under rotated options: "B. Piano" -> "<new letter of B>. Piano"; abstention sentences
    (and None) are unchanged."""
    letter, dot, text = (response or "").partition(". ")
    return f"{new_of[letter]}. {text}" if dot and letter in new_of else response


def _rotated_preferences(cfg: QuickstartConfig, stage: Stage, data: Path) -> None:
    """The Table-5 methods' training rows, each shown under one CircularEval rotation drawn from (seed, id):
    otherwise "None of the above" is always the last letter in training and a model can learn "abstain =
    the last letter" instead of "abstain = the option that says so", which every rotated pass punishes.
    Chosen, rejected and anchor responses follow their options to the new letters."""
    import random

    from datasets import load_from_disk

    from cavpref.eval.circular import n_passes
    from cavpref.eval.loader import load_items

    prefs = load_from_disk(str(data / "preferences"))
    items = {i.id: i for i in load_items(data, split="train").items}

    def rotate(row: dict) -> dict:
        item = items.get(row["id"])
        if item is None:
            raise ValueError(f"{data / 'preferences'}: train row {row['id']!r} has no benchmark item of that id "
                             f"under {data} (prep output from another run?)")
        k = random.Random(f"{cfg.seed}:{row['id']}").randrange(n_passes(item.options))
        _, new_of, row["prompt"] = rotated_view(item, k)
        for col in ("chosen", "rejected", "visual_response", "audio_response"):
            row[col] = rotate_response(row[col], new_of)
        return row

    prefs["train"] = prefs["train"].map(rotate, desc="rotating options")
    prefs.save_to_disk(str(stage.dir))
    stage.finish(rows=len(prefs["train"]))


def split_clips(data: Path) -> tuple[set[str], set[str]]:
    """(train, test) source clip files of the prep output (the split is by source clip, so they are disjoint)."""
    from datasets import load_from_disk

    prefs = load_from_disk(str(data / "preferences"))
    test = {f for ids in prefs["test"]["source_ids"] for f in ids}
    return {f for ids in prefs["train"]["source_ids"] for f in ids} - test, test


def _captions(cfg: QuickstartConfig, stage: Stage, world: Path, data: Path) -> None:
    """The starting model's SFT data: every CircularEval view of CLEAN's train items (``rotated_rows``) plus
    ``clip_captions`` of every *train* clip (a clip of the test split never appears: the split is by source
    clip)."""
    from datasets import Dataset, load_from_disk

    from cavpref.media.spec import clip as clip_spec
    from cavpref.media.spec import to_json
    from cavpref.eval.loader import load_items

    train_files, _ = split_clips(data)
    features = load_from_disk(str(data / "preferences"))["train"].features
    clean = rotated_rows(load_items(data, split="train",
                                    keep=lambda it: it.task == CLEAN_TASK).items, list(features))
    manifest = json.loads((world / "world.json").read_text())
    rows = []
    for source in ("music_avqa", "avqa", "audioset"):
        for clip in manifest.get(source, []):
            if clip["file"] not in train_files:
                continue
            for k, (prompt, response) in enumerate(clip_captions(clip)):
                row = {name: None for name in features}
                row.update(id=f"caption:{clip['file']}:{k}", task=CLEAN_TASK, source=source, category="Existential",
                           prompt=prompt, media=to_json(clip_spec(clip["file"])), chosen=response,
                           rejected="Nothing" if response != "Nothing" else "Something", source_ids=[clip["file"]])
                rows.append(row)
    if not rows:
        raise RuntimeError(f"no train clips of {world / 'world.json'} in {data / 'preferences'}")
    Dataset.from_list(clean + rows, features=features).shuffle(seed=cfg.seed).save_to_disk(str(stage.dir / "train"))
    stage.finish(clean=len(clean), captions=len(rows), clips=len(train_files))


def _model(cfg: QuickstartConfig, stage: Stage, data: Path) -> None:
    from cavpref.models.tiny import build_tiny_qwen_omni

    build_tiny_qwen_omni(
        stage.dir, hidden_size=cfg.hidden_size, num_hidden_layers=cfg.num_hidden_layers,
        num_attention_heads=cfg.num_attention_heads, num_key_value_heads=cfg.num_key_value_heads,
        intermediate_size=cfg.intermediate_size, vision_hidden_size=cfg.vision_hidden_size,
        vision_depth=cfg.vision_depth, audio_d_model=cfg.audio_d_model, audio_layers=cfg.audio_layers,
        frame_pixels=cfg.frame_size * cfg.frame_size, extra_corpus=_corpus(data), vocab_size=cfg.vocab_size,
        seed=cfg.seed,
    )
    stage.finish()


def recipe(cfg: QuickstartConfig, *, method: str, model: Path, train: Path, world: Path, out: Path,
           steps: int, lr: float, tasks: list[str], seed: int | None = None, encoders: bool = False,
           **overrides: Any) -> dict:
    """The ``cavpref train`` recipe of one stage on the dataset saved at ``train`` (``overrides``: any other
    recipe key, e.g. ``lambda_a``).

    ``encoders=True`` trains the vision and audio towers too. The adapters freeze them by default (right for a
    pretrained AVLLM, and kept for the Table-5 methods, as in the paper), but the starting model is random:
    with frozen random towers it never learns to see or hear (measured: caption accuracy 0 %, identical
    accuracy with either stream removed) and falls back on the questions' text priors."""
    seed = cfg.seed if seed is None else seed
    beta = {} if cfg.calibrate_beta and method.startswith("cavpref") else {
        "beta": cfg.beta, "beta_y": cfg.beta, "beta_v": cfg.beta, "beta_a": cfg.beta}
    return {
        "method": method, **beta,
        "train_dataset": str(train), "train_tasks": tasks, "media_root": str(world),
        "output_dir": str(out), "learning_rate": lr, "max_steps": steps, "lr_scheduler_type": "cosine",
        "warmup_steps": max(1, steps // 20), "per_device_train_batch_size": cfg.batch_size, "seed": seed,
        "data_seed": seed, "logging_steps": max(1, steps // 20), "save_strategy": "steps",
        "save_steps": max(1, steps // 2), "save_total_limit": 1, "use_cpu": True, "bf16": False,
        "activation_checkpointing": False, "dataloader_num_workers": 0, "report_to": "none",
        "media_cache_size": 2048,  # a decoded 4-s world clip is 0.33 MB; clips recur across tasks and epochs
        "model": {"model_name_or_path": str(model), "dtype": "float32", "lora_r": 0,
                  "num_frames": cfg.num_frames, "frame_height": cfg.frame_size, "frame_width": cfg.frame_size,
                  "freeze_vision": not encoders, "freeze_audio": not encoders, "train_projectors": encoders},
        **overrides,
    }


def train_stage(cfg: QuickstartConfig, stage: Stage, recipe: dict) -> None:
    """``cavpref train`` on the stage's recipe (written to ``<root>/recipes/``), resuming a partial run."""
    from cavpref.train import main as train_main

    stage.dir.mkdir(parents=True, exist_ok=True)
    path = stage.root / "recipes" / f"{stage.name.replace('/', '__')}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    argv = [str(path)]
    if any(stage.dir.glob("checkpoint-*")):
        argv += ["--resume_from_checkpoint", "last"]
    code = train_main(argv)
    if code:
        raise RuntimeError(f"training stage {stage.name} failed (exit {code}); recipe {path}")
    stage.finish(recipe=str(path))


def eval_stage(cfg: QuickstartConfig, stage: Stage, model: Path, data: Path, world: Path, label: str, *,
               tasks: list[str] | None = None, drop_stream: str | None = None) -> dict:
    """The paper protocol on the test split: instruction setting, CircularEval (vanilla = its first pass)."""
    from cavpref.eval.pipeline import EvalArgs, evaluate

    args = EvalArgs(model=str(model), data=str(data), output=str(stage.dir), tasks=tasks or [*TASKS, CLEAN_TASK],
                    setting="instruction", circular=True, limit=cfg.eval_limit or None, mode=cfg.eval_mode, label=label,
                    media_root=str(world), num_frames=cfg.num_frames, frame_height=cfg.frame_size,
                    frame_width=cfg.frame_size, max_new_tokens=24, no_judge=True, drop_stream=drop_stream)
    results = evaluate(args)
    if not results["metrics"]["counts"]["evaluated"]:
        raise RuntimeError(f"evaluation {stage.name}: no test items of {args.tasks} in {data} (world too small for "
                           f"a test split? raise --num_clips)")
    stage.finish(label=label)
    return results


def run(cfg: QuickstartConfig) -> dict:
    root = Path(cfg.out)
    root.mkdir(parents=True, exist_ok=True)
    (root / "quickstart_config.json").write_text(json.dumps(asdict(cfg), indent=1))
    stage = Stages(cfg, root)
    world = stage("world", _world).dir
    data = stage("data", _prep, world).dir
    init = stage("model_init", _model, data).dir
    start_data = stage("start_data", _captions, world, data).dir
    start = stage("start", train_stage, recipe(cfg, method="sft", model=init, train=start_data / "train",
                                               world=world, out=root / "start", steps=cfg.sft_steps,
                                               lr=cfg.sft_learning_rate, tasks=[CLEAN_TASK], encoders=True)).dir
    prefs = stage("pref_data", _rotated_preferences, data).dir
    trained = {}
    for method in cfg.methods:
        trained[method] = stage(method, train_stage, recipe(
            cfg, method=method, model=start, train=prefs, world=world, out=root / method, steps=cfg.pref_steps,
            lr=cfg.pref_learning_rate, tasks=list(TASKS))).dir
    runs = {}
    for name, model in {"start": start, **trained}.items():
        runs[name] = stage(f"eval/{name}", eval_stage, model, data, world, LABELS[name]).dir
    times = root / "timings.json"  # every stage's wall time, from the invocation that ran it
    recorded = {**(json.loads(times.read_text()) if times.exists() else {}), **stage.timings}
    times.write_text(json.dumps(recorded, indent=1))
    report = write_report(cfg, root, runs, recorded)
    _say(f"report: {report}")
    return {"report": str(report), "runs": {k: str(v) for k, v in runs.items()}, "timings": stage.timings,
            "root": str(root), "world": str(world), "data": str(data), "start": str(start),
            "pref_data": str(prefs)}


# ----- report ---------------------------------------------------------------------------------------------

def task_accuracy(results: dict, task: str, metric: str = "circular") -> float | None:
    """Accuracy (%) of one task in the instruction setting: ``circular`` or ``vanilla``."""
    block = results["metrics"]["settings"].get("instruction", {}).get("tasks", {}).get(task)
    return None if block is None else block.get(metric)


def clean_chance(data: Path, limit: int | None = None) -> float:
    """Vanilla chance on CLEAN's instruction test items: the mean of 1 / (number of options)."""
    from datasets import load_from_disk

    rows = load_from_disk(str(data / "benchmark" / CLEAN_TASK))["test"]
    rows = sorted((r for r in rows if r["setting"] == "instruction"), key=lambda r: r["id"])[:limit]
    return 100.0 * sum(1 / len(r["option_letters"]) for r in rows) / max(1, len(rows))


def _fmt(v: float | None) -> str:
    return "–" if v is None else f"{v:.2f}"


def category_table(results: dict[str, dict]) -> list[str]:
    """Rows: methods; columns: question categories; cell: circular accuracy macro-averaged over the 9 tasks
    that have the category (instruction setting). CLEAN is left out (it is in its own column elsewhere)."""
    from cavpref.data import CATEGORIES

    def cell(res: dict, cat: str) -> float | None:
        tasks = res["metrics"]["settings"].get("instruction", {}).get("tasks", {})
        vals = [b["categories"][cat]["circular"] for t, b in tasks.items()
                if t in TASKS and cat in b.get("categories", {}) and b["categories"][cat].get("circular") is not None]
        return sum(vals) / len(vals) if vals else None

    cats = [c for c in CATEGORIES if any(cell(r, c) is not None for r in results.values())]
    lines = ["| Method | " + " | ".join(cats) + " |", "|---" * (len(cats) + 1) + "|"]
    lines += [f"| {LABELS.get(n, n)} | " + " | ".join(_fmt(cell(r, c)) for c in cats) + " |" for n, r in results.items()]
    return lines


def plot_methods(results: dict[str, dict], path: Path) -> Path:
    """Grouped bars: every method's circular and vanilla accuracy per task (instruction setting)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = [*TASKS, CLEAN_TASK]
    fig, axes = plt.subplots(2, 1, figsize=(12, 6.5), sharex=True)
    width = 0.8 / max(1, len(results))
    for ax, metric in zip(axes, ("circular", "vanilla")):
        for i, (name, res) in enumerate(results.items()):
            ys = [task_accuracy(res, t, metric) or 0.0 for t in tasks]
            ax.bar([k + i * width for k in range(len(tasks))], ys, width, label=LABELS.get(name, name))
        ax.set_ylabel(f"{metric} accuracy (%)")
        ax.grid(axis="y", alpha=0.3)
    axes[1].set_xticks([k + 0.4 - width / 2 for k in range(len(tasks))], tasks, rotation=20)
    axes[0].legend(ncol=len(results), fontsize=8, loc="upper left")
    fig.suptitle("cavpref quickstart: synthetic AVTrustBench test split, instruction setting")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write_report(cfg: QuickstartConfig, root: Path, runs: dict[str, Path], timings: dict[str, float]) -> Path:
    from cavpref.eval.report import compare

    results = {name: json.loads((path / "results.json").read_text()) for name, path in runs.items()}
    names = list(results)
    labels = [LABELS[n] for n in names]
    table = compare([results[n] for n in names], labels, setting="instruction") if len(names) > 1 else ""
    vanilla = compare([results[n] for n in names], labels, setting="instruction", metric="vanilla") \
        if len(names) > 1 else ""
    chance = clean_chance(root / "data", cfg.eval_limit or None)
    start = results["start"]
    clean = [f"| {LABELS[n]} | {_fmt(task_accuracy(r, CLEAN_TASK, 'vanilla'))} | "
             f"{_fmt(task_accuracy(r, CLEAN_TASK, 'circular'))} | {_fmt(r['metrics']['overall'].get('unparsed_rate'))} |"
             for n, r in results.items()]
    plot = plot_methods(results, root / "plots" / "methods.png")
    lines = [
        "# cavpref quickstart", "",
        f"config: `{json.dumps(asdict(cfg))}`", "",
        (f"Starting model (SFT on the clean questions) on CLEAN test, instruction setting: vanilla "
         f"{_fmt(task_accuracy(start, CLEAN_TASK, 'vanilla'))} % (chance {chance:.2f} %), circular "
         f"{_fmt(task_accuracy(start, CLEAN_TASK, 'circular'))} %."), "",
        "β is fixed for every method (no CLAP / CLIP checkpoints offline; see the module docstring).", "",
        "## Table 5 layout — CircularEval (instruction setting; difference from the starting model)", "", table, "",
        "## Table 5 layout — vanilla (first pass only)", "", vanilla, "",
        "## CLEAN after training (exposes 'always abstain' collapse: 7 of 9 tasks reward abstention)", "",
        "| Method | CLEAN vanilla | CLEAN circular | unparsed % (all tasks) |", "|---|---|---|---|", *clean, "",
        "## Per category (circular, macro over the 9 tasks that have it)", "", *category_table(results), "",
        f"Per-source task x category tables: `eval/<method>/report.md`. Plot: `{plot.relative_to(root)}`.", "",
        "## Stage wall time (when each stage ran; reused stages keep their time)", "", "| stage | seconds |",
        "| --- | --- |", *[f"| {k} | {v:.1f} |" for k, v in timings.items()],
        f"| total | {sum(timings.values()):.1f} |",
    ]
    path = root / "report.md"
    path.write_text("\n".join(lines) + "\n")
    print(table)
    return path


def main(argv: list[str] | None = None) -> int:
    from transformers import HfArgumentParser

    (cfg,) = HfArgumentParser(QuickstartConfig).parse_args_into_dataclasses(args=argv)
    run(cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
