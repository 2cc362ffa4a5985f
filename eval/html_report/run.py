"""A finished run folder read back for its HTML report: the items (re-read from the run's data with its own
keys), their records and outcomes, exactly as the run used them.

The records a run used are found the way the runner found them: by their key, recomputed from the run's
keys (``results.json`` ``config``) and the model as ``results.json`` describes it (fingerprint,
generation) — so records of an earlier model or prompt in the same folder are never shown as this run's.
The outcomes are rebuilt by the benchmark from those records and checked against ``results.json``
``counts``; a difference (records deleted or added since) is a warning on the page. A run of external
predictions (``eval score``) kept no records: its predictions file is scored again, the judge's replies
coming from the run's judge cache.
"""

from __future__ import annotations

import json
import os
from dataclasses import fields
from pathlib import Path

from cavpref.eval import pipeline, registry
from cavpref.eval.args import EvalArgs
from cavpref.eval.html_report.write import RunView, by_item
from cavpref.eval.metrics import counts


class RecordedModel:
    """The model as results.json describes it — its fingerprint and generation settings, the parts of a
    record key that come from the model — standing in for the backend when records are looked up."""

    def __init__(self, described: dict):
        self.described = described
        self.fingerprint = described.get("fingerprint")

    def describe(self) -> dict:
        return self.described


RELATIVE_INPUTS = ("data", "media_root")


def run_args(results: dict, data: str | None = None, media_root: str | None = None) -> tuple[EvalArgs, dict]:
    """The run's ``EvalArgs`` and its benchmark's options, from results.json ``config`` (``data`` /
    ``media_root`` override where the data moved)."""
    name = registry.benchmark_of(results)
    config = dict(results.get("config") or {})
    for key in RELATIVE_INPUTS:  # given relative to the folder the run was started in (results' working_dir)
        path = config.get(key)
        if isinstance(path, str) and path and not os.path.isabs(path) and results.get("working_dir"):
            there = os.path.join(results["working_dir"], path)
            if os.path.exists(there):
                config[key] = there
    if data:
        config["data"] = data
    if media_root:
        config["media_root"] = media_root
    own = {f.name for f in fields(EvalArgs)}
    args = EvalArgs(**{k: v for k, v in config.items() if k in own and k != "benchmark"}, benchmark=name)
    opt_fields = {f.name for f in fields(registry.get(name).Options)}
    return args, {k: v for k, v in config.items() if k in opt_fields}


def load_run(run_dir: str | Path, *, data: str | None = None, media_root: str | None = None) -> RunView:
    """``run_dir`` (a finished run folder) read back: items, records and outcomes as the run used them."""
    run_dir = Path(run_dir)
    path = run_dir / "results.json"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found (is {run_dir} a finished run folder?)")
    results = json.loads(path.read_text(encoding="utf-8"))
    args, options = run_args(results, data, media_root)
    args.output = str(run_dir)
    external = results.get("mode") == "external predictions"
    # a run of external predictions is scored again: its judge answers from the run's cache
    bench = registry.create(args, options, client=pipeline.build_judge_client(args) if external else None)
    try:
        loaded = pipeline.load(args, bench=bench)
    except (OSError, ValueError) as err:
        raise ValueError(
            f"{run_dir}: cannot re-read the run's items from its data ({err}); give --data (and "
            "--media_root) where the data is now"
        ) from err
    warnings = []
    if external:
        path, harness = results["model"]["predictions"], (results.get("predictions") or {}).get("harness")
        rows = None
        if harness is not None:  # another harness's file (eval.harness), read as `eval score` read it
            from cavpref.eval.harness.export import read_harness

            rows = read_harness(harness, path)
        outcomes, used, _ = pipeline.score_external(bench, loaded, path, rows)
    else:
        bench.backend = RecordedModel(results["model"])
        runner = pipeline.runner_for(args, bench, loaded, rank=0, world=1)
        outcomes, used = runner.collect(loaded.items)
    found = counts(outcomes)
    wrote = results.get("counts") or results.get("metrics", {}).get("counts") or {}
    if {k: found.get(k) for k in ("evaluated", "skipped", "incomplete")} != {
        k: wrote.get(k) for k in ("evaluated", "skipped", "incomplete")
    }:
        warnings.append(
            f"the records in {run_dir} give {found['evaluated']} evaluated / {found['skipped']} skipped / "
            f"{found['incomplete']} incomplete items, results.json says {wrote.get('evaluated')} / "
            f"{wrote.get('skipped')} / {wrote.get('incomplete')}: records changed since the run (or its "
            "data did); the items below are what the records hold now"
        )
    return RunView(results, bench, loaded.items, by_item(used), outcomes, loaded.media_root, args, warnings)
