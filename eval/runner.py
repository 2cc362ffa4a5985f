"""The shared evaluation runner: items -> passes -> model answers -> scored records, resumable, sharded.

A benchmark (``cavpref.eval.registry.Benchmark``) plugs in as four things: how many passes an item may
need and which comes next (CircularEval's early stop, MMAR's inference runs), the request of a pass
(prompt, option candidates, sampling), how a batch of answers is scored (extraction, judges), and the item
outcome. The runner owns everything else, once for every benchmark:

- *Records, appended as produced.* One JSONL line per pass in ``records.rank<R>.jsonl``; a line's
  ``key`` is sha256 of (model fingerprint, answer mode, generation config, frame policy, prompt, media,
  candidates, the pass's sampling). A rerun replays every pass whose key is on disk and computes only the rest, so a killed
  run resumed with the same command ends with the same results, and a changed model or prompt never
  meets a stale answer. A replayed pass is re-scored from its stored answer when the item changed in what
  the key does not cover (``item_digest``: a corrected answer key), so it never keeps a stale ``correct``
  flag. Per-item failures (bad media, an adapter refusing a row, an endpoint error)
  are recorded as ``skipped`` with the reason and retried on the next run; a pass whose judge failed is
  re-judged from its stored response, never regenerated.
- *Waves.* Items go in chunks; a chunk's media are decoded once and reused by all its passes, and pass k
  of an item is only asked once pass k-1 is scored, so early stopping actually saves model calls.
- *Data parallel.* Under ``accelerate launch`` each process takes items[rank::world]; the main process
  then rebuilds every item's outcome from all ranks' record files, so results do not depend on the
  number of processes or the order anything finished. (Multi-node: the output folder must be shared.)
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

from cavpref import jsonl
from cavpref.eval.metrics import ItemOutcome
from cavpref.media.decode import DecodedMedia, FramePolicy
from cavpref.redact import redact


@dataclass
class PassRequest:
    """What the model is asked in one pass; ``info`` travels to scoring (rotated options, answer, ...).
    ``sampling`` overrides greedy decoding for this pass (``{"do_sample": True, "seed": 43,
    "temperature": 1.0}``: one of MMAR's inference runs); it is part of the record key."""

    prompt: str
    candidates: list[str] | None = None
    info: dict[str, Any] = field(default_factory=dict)
    letters: list[str | None] | None = None  # likelihood mode: each candidate's answer letter (None: none)
    sampling: dict[str, Any] | None = None


@dataclass
class Job:
    item: Any
    k: int
    request: PassRequest
    key: str
    output: Any = None
    error: str | None = None


#: what a likelihood pass stores under ``scores`` (``cavpref.eval.option_score``); part of every record key
LIKELIHOOD_SCORES = "sum, tokens, letter"


@dataclass
class RunConfig:
    output_dir: str
    media_root: str
    mode: str = "generate"  # generate | likelihood
    batch_size: int = 8
    chunk_size: int = 64
    frames: FramePolicy = field(default_factory=FramePolicy)
    sample_rate: int = 16000
    missing_stream: str = "allow"  # a stream the spec keeps but the file lacks: allow (counted) | error

    def __post_init__(self):
        if self.mode not in ("generate", "likelihood"):
            raise ValueError(f"mode must be 'generate' or 'likelihood', got {self.mode!r}")
        if self.missing_stream not in ("allow", "error"):
            raise ValueError(f"missing_stream must be 'allow' or 'error', got {self.missing_stream!r}")


def dist_state():
    """accelerate's process state. Under a launcher without GPUs (torchrun / ``accelerate launch`` on CPU)
    plain ``PartialState()`` stays single-process, so CPU processes join a gloo group explicitly."""
    import os

    import torch
    from accelerate import PartialState

    if not torch.cuda.is_available() and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        return PartialState(cpu=True, backend="gloo")
    return PartialState()


def load_records(output_dir: str | Path) -> dict[str, dict]:
    """key -> latest record over all ranks' files; a torn last line (a killed writer) is ignored."""
    records: dict[str, dict] = {}
    for path in sorted(Path(output_dir).glob("records.rank*.jsonl")):
        text = jsonl.read_text(path)
        last = text.count("\n") + 1
        for n, line in jsonl.split_lines(text):
            try:
                rec = jsonl.parse_line(line, path, n)
            except jsonl.JsonlError as err:
                if n >= last - 1:  # the final, unterminated line of a killed run
                    continue
                raise ValueError(f"{path}: line {n}: corrupt record ({err.detail})") from None
            old = records.get(rec["key"])
            if old is None or rec["status"] == "ok" or old["status"] != "ok":
                records[rec["key"]] = rec
    return records


class Runner:
    def __init__(
        self,
        benchmark: Any,
        backend: Any,
        config: RunConfig,
        *,
        rank: int | None = None,
        world: int | None = None,
    ):
        self.bench, self.backend, self.cfg = benchmark, backend, config
        self._state = None
        if rank is None:
            self._state = dist_state()
            rank, world = self._state.process_index, self._state.num_processes
        self.rank, self.world = rank, world or 1
        self.output_field = "response" if config.mode == "generate" else "scores"
        self.key_basis = {
            "fingerprint": backend.fingerprint,
            "mode": config.mode,
            "generation": backend.describe().get("generation"),
            "frames": asdict(config.frames),
            "sample_rate": config.sample_rate,
        }
        if (
            config.mode == "likelihood"
        ):  # what a pass records: passes recorded before the letter was are redone
            self.key_basis["scores"] = LIKELIHOOD_SCORES
        self._missing: dict[str, list[str]] = {}  # item id -> streams its file lacks (this run's decodes)
        self.stats = {
            "passes_computed": 0,
            "passes_reused": 0,
            "passes_rescored": 0,
            "skipped": 0,
            "seconds": 0.0,
        }

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def key(self, item: Any, request: PassRequest) -> str:
        blob = {
            **self.key_basis,
            "benchmark": self.bench.name,
            "prompt": request.prompt,
            "media": item.media,
            "candidates": request.candidates,
        }
        if getattr(self.bench, "key_extra", None) is not None:  # e.g. TraceAV's long-video sampling policy
            blob["bench"] = self.bench.key_extra
        if request.sampling is not None:  # keys of greedy passes stay as before
            blob["sampling"] = request.sampling
        return hashlib.sha256(json.dumps(blob, sort_keys=True, ensure_ascii=False).encode()).hexdigest()

    # ------------------------------------------------------------------------------------------------ run
    def run(self, items: Sequence[Any]) -> dict:
        """Evaluate this rank's share of ``items``; returns this rank's counters."""
        from tqdm.auto import tqdm

        start = time.perf_counter()
        out = Path(self.cfg.output_dir)
        out.mkdir(parents=True, exist_ok=True)
        done = load_records(out)
        self._rescored: set[str] = set()
        shard = list(items)[self.rank :: self.world]
        path = out / f"records.rank{self.rank}.jsonl"
        _drop_torn_tail(path)
        with open(path, "a", encoding="utf-8") as fh:
            bar = tqdm(total=len(shard), desc=f"{self.bench.name} [{self.cfg.mode}]", disable=not shard)
            for i in range(0, len(shard), self.cfg.chunk_size):
                chunk = shard[i : i + self.cfg.chunk_size]
                self._run_chunk(chunk, done, fh)
                bar.update(len(chunk))
            bar.close()
        self.stats["seconds"] = round(time.perf_counter() - start, 3)
        if self._state is not None:
            self._state.wait_for_everyone()
        return dict(self.stats)

    def _run_chunk(self, chunk: list, done: dict[str, dict], fh) -> None:
        history: dict[str, list[dict]] = {item.id: [] for item in chunk}
        media: dict[str, DecodedMedia | None | str] = {}
        failed: set[str] = set()
        while True:
            fresh, rescore = self._next_jobs(chunk, history, done, failed)
            if not fresh and not rescore:
                return
            ready = []
            for job in fresh:
                decoded = self._media(job.item, media)
                if isinstance(decoded, str):
                    job.error = decoded
                else:
                    ready.append(job)
            if rescore:
                self._score_and_write(rescore, history, done, fh)
                self.stats["passes_rescored"] += len(rescore)
            for batch in self._batches(ready):  # written batch by batch: a kill loses one batch
                self._infer(batch, media)
                good = [j for j in batch if j.error is None]
                self._score_and_write(good, history, done, fh)
                self.stats["passes_computed"] += len(good)
            for job in fresh:
                if job.error is not None:
                    failed.add(job.item.id)
                    self.stats["skipped"] += 1
                    self._write(
                        fh,
                        {
                            "key": job.key,
                            "item_id": job.item.id,
                            "pass": job.k,
                            "status": "skipped",
                            "reason": job.error,
                        },
                        done,
                    )
            fh.flush()

    def _batches(self, jobs: list[Job]):
        """Batches of ``batch_size`` jobs that share their sampling (one generate call each)."""
        groups: dict[str, list[Job]] = {}
        for job in jobs:
            groups.setdefault(json.dumps(job.request.sampling, sort_keys=True), []).append(job)
        for group in groups.values():
            for b in range(0, len(group), self.cfg.batch_size):
                yield group[b : b + self.cfg.batch_size]

    def _score_and_write(self, jobs: list[Job], history: dict, done: dict, fh) -> None:
        if not jobs:
            return
        for job, rec in zip(jobs, self.bench.score(jobs)):
            rec = {
                "key": job.key,
                "item_id": job.item.id,
                "pass": job.k,
                "status": "ok",
                "mode": self.cfg.mode,
                self.output_field: job.output,
                **rec,
            }
            rec["item_digest"] = item_digest(job.item)
            if job.item.id in self._missing:
                rec["missing_streams"] = self._missing[job.item.id]
            self._write(fh, rec, done)
            history[job.item.id].append(rec)
        fh.flush()

    def _next_jobs(self, chunk, history, done, failed) -> tuple[list[Job], list[Job]]:
        fresh, rescore = [], []
        for item in chunk:
            if item.id in failed:
                continue
            recs = history[item.id]
            while (k := self.bench.next_pass(item, recs)) is not None:
                request = self.bench.request(item, k)
                key = self.key(item, request)
                rec = done.get(key)
                if rec is None or rec["status"] != "ok":
                    fresh.append(Job(item, k, request, key))
                    break
                stale = rec.get("item_digest") != item_digest(item)  # e.g. a corrected answer key
                if key not in self._rescored and (stale or self.bench.needs_rescore(rec)):
                    self._rescored.add(key)
                    rescore.append(Job(item, k, request, key, output=rec[self.output_field]))
                    break
                self.stats["passes_reused"] += 1
                recs.append(rec)
        return fresh, rescore

    def _write(self, fh, rec: dict, done: dict[str, dict]) -> None:
        rec = redact(rec)  # an endpoint or judge may echo a configured key in its error body
        fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")
        done[rec["key"]] = rec

    def _media(self, item: Any, cache: dict) -> DecodedMedia | None | str:
        """The item's decoded media (once per chunk), or a string saying why it could not be decoded."""
        if item.id not in cache:
            from cavpref.media.decode import decode

            own = getattr(self.bench, "decode_media", None)  # a benchmark with its own sampling (TraceAV)
            try:
                if own is not None and item.media:
                    cache[item.id] = own(item, self.cfg.media_root)
                else:
                    cache[item.id] = (
                        decode(
                            item.media,
                            self.cfg.media_root,
                            frames=self.cfg.frames,
                            sample_rate=self.cfg.sample_rate,
                        )
                        if item.media
                        else None
                    )
            except Exception as err:  # noqa: BLE001 - recorded per item with its type and message
                cache[item.id] = f"media: {type(err).__name__}: {err}"
            else:
                self._check_streams(item, cache[item.id])
        return cache[item.id]

    def _check_streams(self, item: Any, decoded: Any) -> None:
        """A stream the item's spec keeps but its file lacks: noted on its records (counted per task in
        results.json), or an error under ``missing_stream: error``."""
        from cavpref.media.missing import describe_missing, missing_streams
        from cavpref.media.spec import MediaError

        if not item.media or not isinstance(decoded, DecodedMedia):
            return
        missing = missing_streams(item.media, decoded)
        if not missing:
            return
        if self.cfg.missing_stream == "error":
            raise MediaError(
                f"item {item.id} ({item.task}): {describe_missing(item.media, missing)} "
                "(missing_stream: error; 'allow' evaluates it without and counts it)"
            )
        self._missing[item.id] = missing

    def _infer(self, jobs: list[Job], media: dict) -> None:
        """Run the model on a batch; a row the adapter rejects is isolated and recorded, not fatal."""
        from cavpref.media.spec import MediaError
        from cavpref.models.base import ModelIOError

        prompts = [j.request.prompt for j in jobs]
        decoded = [media[j.item.id] for j in jobs]
        keys = [j.item.media or j.item.id for j in jobs]
        try:
            if self.cfg.mode == "generate":
                sampling = jobs[0].request.sampling  # a batch shares it (``_batches``)
                outputs = (
                    self.backend.generate(prompts, decoded, keys)
                    if sampling is None
                    else self.backend.generate(prompts, decoded, keys, sampling=sampling)
                )
            else:
                outputs = self.backend.option_logps(
                    prompts,
                    decoded,
                    keys,
                    [j.request.candidates for j in jobs],
                    [j.request.letters for j in jobs],
                )
        except (ModelIOError, MediaError) as err:
            if len(jobs) == 1:
                jobs[0].error = f"model input: {type(err).__name__}: {err}"
                return
            for job in jobs:
                self._infer([job], media)
            return
        for job, (value, error) in zip(jobs, outputs):
            job.output, job.error = value, error

    # ------------------------------------------------------------------------------------------------ collect
    def collect(self, items: Sequence[Any]) -> tuple[list[ItemOutcome], list[dict]]:
        """Every item's outcome rebuilt from all ranks' records (call on the main process after ``run``)."""
        done = load_records(self.cfg.output_dir)
        outcomes, used = [], []
        for item in sorted(items, key=lambda i: i.id):
            recs: list[dict] = []
            status, reason = "evaluated", ""
            while (k := self.bench.next_pass(item, recs)) is not None:
                rec = done.get(self.key(item, self.bench.request(item, k)))
                if rec is None:
                    status = "incomplete"
                    break
                if rec["status"] != "ok":
                    status, reason = "skipped", rec["reason"]
                    break
                recs.append(rec)
            used += recs
            if status == "evaluated":
                outcomes.append(self.bench.outcome(item, recs))
            else:
                outcomes.append(
                    ItemOutcome(
                        item.id,
                        item.task,
                        item.setting,
                        item.source,
                        item.category,
                        status=status,
                        reason=_short(reason),
                    )
                )
        return outcomes, used


def item_digest(item: Any) -> str:
    """A short hash of every field of ``item``: what a stored pass was scored against. The record key
    covers only what the model saw (prompt, media), so a corrected answer key used to meet each stored
    pass's old ``correct`` flag; a record whose digest differs is re-scored from its stored answer."""
    fields = asdict(item) if is_dataclass(item) else vars(item)
    blob = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _drop_torn_tail(path: Path) -> None:
    """Cut an unterminated last line (a writer killed mid-line) so that appending starts on a fresh line."""
    if not path.is_file() or path.stat().st_size == 0:
        return
    with open(path, "r+b") as fh:
        fh.seek(-1, 2)
        if fh.read(1) != b"\n":
            fh.seek(0)
            fh.truncate(fh.read().rfind(b"\n") + 1)


def _short(reason: str) -> str:
    """A countable skip reason: its kind and first clause (file names and ids stay in the records)."""
    return reason.split(":")[0] + (": " + reason.split(":")[1].strip() if ":" in reason else "")
