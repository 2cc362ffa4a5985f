"""An lmms-eval task folder of a cavpref benchmark, the functions its ``utils.py`` calls, and its logs read back.

The folder is the layout of lmms-eval's own ``lmms_eval/tasks/<name>/``: ``<name>.yaml`` (a
``generate_until`` task on a local JSON dataset, its hooks ``!function utils.…``), ``utils.py`` (a shim
importing ``TaskFolder`` below), ``docs.jsonl`` (one doc per pass: CircularEval's rotations are separate
docs, each with the exact cavpref prompt and the pass's media files), ``items.jsonl`` (the benchmark items)
and ``export.json``. ``lmms-eval --tasks <name> --include_path <folder> --log_samples`` runs it.

Its metrics are cavpref's: ``process_results`` scores a reply with the benchmark's own ``score`` (for
AVTrustBench the two-step choice extraction, step 1 here — lmms-eval has no judge of ours), and each
aggregation hands every reply of the run to ``pipeline.score_external`` — what ``cavpref eval score`` does
with a predictions file — then reads one number of the benchmark's headline (AVTrustBench: circular and
vanilla accuracy, unparsed rate, per setting paired trust and CLEAN's false-abstention rate). CircularEval's
early stop is applied there as ``cavpref eval`` applies it, so the numbers are the same, not an
approximation. lmms-eval's sample log keeps each doc's ``process_results`` value (the pass's id, index and
reply), which ``read_samples`` turns back into predictions rows.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from cavpref.data import BenchmarkItem
from cavpref.eval import registry
from cavpref.eval.args import EvalArgs
from cavpref.eval.common import BenchmarkInputError, read_records
from cavpref.eval.harness.passes import SAMPLE_RATE, Pass
from cavpref.eval.runner import Job

#: the key of every process_results value (and so of every metric entry in lmms-eval's sample log)
KEYS = ("id", "pass", "response")


def metric_names(bench, passes: list[Pass]) -> list[str]:
    """The task's metrics: the benchmark's headline flattened (``trust.instruction.paired`` ->
    ``trust_instruction_paired``), its keys found by scoring the gold answers once."""
    rows = [
        (f"pass {i}", {"id": p.item.id, "rotation": p.k, "response": f"The answer is {p.answer}."})
        for i, p in enumerate(passes)
        if p.answer
    ]
    return sorted(_flatten(_headline(bench, [p.item for p in _first(passes)], rows)))


def _first(passes: list[Pass]) -> list[Pass]:
    return [p for p in passes if p.k == 0]


def _flatten(d: dict, prefix: str = "") -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for key, value in d.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, f"{name}_"))
        elif value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            out[name] = value
    return out


def _headline(bench, items: list, rows: list[tuple[str, dict]]) -> dict:
    from cavpref.eval.metrics import counts
    from cavpref.eval.pipeline import score_external

    loaded = registry.Loaded(items, "", {"input": {}})
    outcomes, records, _ = score_external(bench, loaded, "lmms-eval replies", rows)
    by_item: dict[str, list[dict]] = {}
    for rec in records:
        by_item.setdefault(rec["item_id"], []).append(rec)
    evaluated = {o.item_id for o in outcomes if o.status == "evaluated"}
    scored = [(i, by_item[i.id]) for i in items if i.id in evaluated]
    metrics = bench.metrics(scored, outcomes)
    results = {"metrics": metrics, "counts": counts(outcomes), **bench.extra_results(scored, outcomes)}
    return bench.headline(results)


def lower_is_better(name: str) -> bool:
    return any(w in name for w in ("unparsed", "false_abstention", "judged"))


def write_task(
    out: Path, name: str, bench, passes: list[Pass], config: dict, max_new_tokens: int
) -> list[str]:
    """Write the task folder; the files written."""
    from importlib.resources import files

    docs = out / "docs.jsonl"
    docs.write_text("".join(json.dumps(p.row(), ensure_ascii=False) + "\n" for p in passes), encoding="utf-8")
    items = out / "items.jsonl"
    items.write_text(
        "".join(json.dumps(p.item.to_row(), ensure_ascii=False) + "\n" for p in _first(passes)),
        encoding="utf-8",
    )
    metrics = metric_names(bench, passes)
    (out / "export.json").write_text(
        json.dumps({**config, "task": name, "metrics": metrics}, indent=1) + "\n"
    )
    (out / "utils.py").write_text(files("cavpref.eval.harness").joinpath("lmms_utils.py").read_text())
    lines = [
        '# written by `cavpref eval export --harness lmms_eval` (docs/evaluation.md, "In lmms-eval and VLMEvalKit")',
        f"task: {json.dumps(name)}",
        "dataset_path: json",
        "dataset_kwargs:",
        "  data_files:",
        f"    test: {json.dumps(str(docs.resolve()))}",
        "test_split: test",
        "output_type: generate_until",
        "doc_to_visual: !function utils.doc_to_visual",
        "doc_to_text: !function utils.doc_to_text",
        "doc_to_target: answer",
        "generation_kwargs:",
        f"  max_new_tokens: {int(max_new_tokens)}",
        "  do_sample: false",
        "  temperature: 0",
        "  until: []",
        "process_results: !function utils.process_results",
        "metric_list:",
    ]
    for m in metrics:
        lines += [
            f"  - metric: {m}",
            f"    aggregation: !function utils.agg_{m}",
            f"    higher_is_better: {'false' if lower_is_better(m) else 'true'}",
        ]
    lines += ["metadata:", "  version: 1", f"  benchmark: {json.dumps(bench.name)}"]
    (out / f"{name}.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [f"{name}.yaml", "utils.py", "docs.jsonl", "items.jsonl", "export.json"]


class TaskFolder:
    """What an exported folder's ``utils.py`` calls: the doc hooks, ``process_results`` and the aggregations,
    with the benchmark rebuilt from ``export.json`` and ``items.jsonl`` (the data need not be at hand)."""

    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self.config = json.loads((self.folder / "export.json").read_text(encoding="utf-8"))
        args = EvalArgs(data=self.config["data"], benchmark=self.config["benchmark"])
        self.bench = registry.create(args, dict(self.config.get("options") or {}))
        self.items = {
            row["id"]: BenchmarkItem.from_row(row) for _, row in read_records(self.folder / "items.jsonl")
        }

    # --- doc hooks
    @staticmethod
    def doc_to_text(doc: dict) -> str:
        return doc["prompt"]

    @staticmethod
    def doc_to_visual(doc: dict) -> list:
        """The video file (its audio track is the item's audio), else the audio as lmms-eval's audio tasks
        give it ({array, sampling_rate}), else nothing."""
        if doc.get("video"):
            return [doc["video"]]
        if doc.get("audio"):
            import soundfile as sf

            array, rate = sf.read(doc["audio"], dtype="float32")
            return [{"array": array, "sampling_rate": rate or SAMPLE_RATE}]
        return []

    # --- scoring
    def process_results(self, doc: dict, results: list) -> dict:
        """Every metric's value for this doc: the pass's id, index and reply, with the benchmark's own
        reading of it (``choice``, ``correct``) for the sample log."""
        reply = results[0] if results else ""
        reply = reply if isinstance(reply, str) else str(reply)
        item = self.items[doc["id"]]
        k = int(doc["pass"])
        job = Job(item, k, self.bench.request(item, k), f"{item.id}/{k}", output=reply)
        rec = self.bench.score([job])[0]
        value = {
            "id": item.id,
            "pass": k,
            "response": reply,
            "choice": rec.get("choice"),
            "correct": rec.get("correct"),
        }
        return {m: value for m in self.config["metrics"]}

    def headline(self, rows: list[tuple[str, dict]]) -> dict:
        """The benchmark's headline numbers of predictions rows ``(where, {id, rotation, response})``, flat
        (``trust_<setting>_paired``, …); also what the VLMEvalKit dataset class's ``evaluate`` returns."""
        return _flatten(_headline(self.bench, list(self.items.values()), rows))

    def aggregate(self, metric: str, values: list) -> float:
        """One headline number over every reply of the run (NaN where the benchmark has none, e.g. no pairs)."""
        rows = [
            (f"doc {i}", {"id": v["id"], "rotation": int(v["pass"]), "response": v["response"]})
            for i, v in enumerate(values)
        ]
        value = self.headline(rows).get(metric)
        return float("nan") if value is None else float(value)


@lru_cache(maxsize=8)
def task_folder(folder: str) -> TaskFolder:
    """One ``TaskFolder`` per folder (lmms-eval imports ``utils.py`` once per hook)."""
    return TaskFolder(folder)


def read_samples(path: str | Path) -> list[tuple[str, dict]]:
    """lmms-eval's ``--log_samples`` JSONL (``<date>_samples_<task>.jsonl``) -> cavpref predictions rows
    ``(where, {id, rotation, response})``: each line's metric entries hold the pass (``process_results``)."""
    out = []
    for where, sample in read_records(path):
        value = next((v for v in sample.values() if isinstance(v, dict) and all(k in v for k in KEYS)), None)
        if value is None:
            raise BenchmarkInputError(
                path,
                where,
                None,
                "no metric entry holding the pass (id, pass, response): not a sample log of a task "
                "written by `cavpref eval export --harness lmms_eval`",
            )
        out.append((where, {"id": value["id"], "rotation": value["pass"], "response": value["response"]}))
    return out


def check_with_lmms_eval(folder: str | Path, name: str) -> int:
    """Load the exported task with lmms-eval's own ``TaskManager`` (``eval export --check``): the docs it
    sees. Needs lmms_eval importable (``pip install 'cavpref[lmms_eval]'``)."""
    try:
        from lmms_eval.tasks import TaskManager
    except ImportError as err:
        raise ValueError(
            f"--check needs lmms_eval importable ({err}); pip install 'cavpref[lmms_eval]'"
        ) from None
    manager = TaskManager(include_path=str(folder), include_defaults=False)
    if name not in manager.all_tasks:
        raise ValueError(
            f"{folder}: lmms-eval's TaskManager does not index task {name!r} ({manager.all_tasks})"
        )
    task = manager.load_task_or_group([name])[name]
    return len(task.test_docs())
