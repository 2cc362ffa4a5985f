"""Evaluation harness benchmark, one run, ratios measured within it.

    python scripts/bench_eval.py [--items 24] [--batch_size 8] [--threads 2]

Prints: items/s of free-form generation vs option log-likelihood on the tiny Qwen2.5-Omni thinker (same
items, vanilla, fresh run folders); judge calls made on a first run and on a rerun in a new folder that
shares the judge cache (the cache must serve all of them); and model passes saved by CircularEval's early
stop. The judge is a local OpenAI-compatible server on loopback that always answers "A", so the number of
judge calls depends only on how many answers the heuristics leave unparsed.
"""

from __future__ import annotations

import json
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from cavpref.parsing import parse_args


def start_judge() -> tuple[ThreadingHTTPServer, list]:
    calls: list = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            calls.append(1)
            body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "A"}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, calls


def make_bench(root: Path, n_items: int) -> Path:
    from cavpref.data import TASKS, BenchmarkItem
    from cavpref.media.spec import clip, concat, drop_video, mute, to_json
    from cavpref.media.write import write_mp4

    rng = np.random.default_rng(0)
    t = np.arange(2 * 16000) / 16000
    for i in range(4):
        write_mp4(
            root / f"c{i}.mp4",
            rng.integers(0, 255, (8, 56, 56, 3), dtype=np.uint8),
            4.0,
            (0.3 * np.sin(2 * np.pi * (220 + 110 * i) * t)).astype(np.float32),
        )
    rows = []
    for n in range(n_items):
        task = TASKS[n % len(TASKS)]
        a, b = clip(f"c{n % 4}.mp4"), clip(f"c{(n + 1) % 4}.mp4")
        media = {"MAT": mute(a), "MVT": drop_video(a), "COT-Stitch": concat(a, b), "CAT": concat(b, a)}.get(
            task, a
        )
        opts = {"A": f"violin {n}", "B": f"piano {n}", "C": f"drum {n}", "D": "None of the above"}
        answer = "ABCD"[n % 4]
        rows.append(
            BenchmarkItem(
                f"b{n:03d}",
                task,
                "bench",
                "Existential",
                "Which instrument is playing?",
                opts,
                answer,
                "instruction",
                0,
                to_json(media),
                "D",
            ).to_row()
        )
    (root / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root / "items.jsonl"


@dataclass
class BenchArguments:
    items: int = field(default=24, metadata={"help": "benchmark items evaluated per measurement"})
    batch_size: int = field(default=8, metadata={"help": "evaluation batch size"})
    threads: int = field(default=2, metadata={"help": "torch CPU threads"})


def main(argv=None) -> None:
    (ns,) = parse_args([BenchArguments], sys.argv[1:] if argv is None else argv, prog="scripts/bench_eval.py")

    import torch

    torch.set_num_threads(ns.threads)
    from cavpref.chat_client import ChatClient, ChatConfig
    from cavpref.eval.backends import ModelIOBackend
    from cavpref.eval.pipeline import EvalArgs, evaluate
    from cavpref.models import build_tiny_qwen_omni, load_model_io

    tmp = Path(tempfile.mkdtemp(prefix="bench_eval_"))
    data = make_bench(tmp, ns.items)
    backend = ModelIOBackend(
        load_model_io(str(build_tiny_qwen_omni(tmp / "tiny"))), generation={"max_new_tokens": 16}
    )
    server, calls = start_judge()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"

    def run(out, judge_cache=None, vanilla=False, **kw):
        client = None
        if judge_cache:
            client = ChatClient(ChatConfig(base_url=url, model="bench-judge", cache_path=str(judge_cache)))
        args = EvalArgs(
            data=str(data), output=str(tmp / out), batch_size=ns.batch_size, num_frames=4, no_judge=True, **kw
        )
        start = time.perf_counter()
        res = evaluate(args, {"vanilla": vanilla}, backend=backend, client=client, rank=0, world=1)
        return res, time.perf_counter() - start, client

    # warm-up (first-call overheads), not measured
    run("warm", vanilla=True, limit=1, mode="likelihood")
    run("warm2", vanilla=True, limit=1)
    gen, t_gen, _ = run("gen", vanilla=True)
    _, t_lik, _ = run("lik", vanilla=True, mode="likelihood")
    n = gen["metrics"]["counts"]["evaluated"]

    first, _, j1 = run("circ1", judge_cache=tmp / "judge.sqlite")
    calls_first = len(calls)
    again, _, j2 = run(
        "circ2", judge_cache=tmp / "judge.sqlite"
    )  # new folder: model reruns, judge cache shared
    calls_rerun = len(calls) - calls_first
    assert again["metrics"] == first["metrics"]
    c = first["metrics"]["counts"]
    lc = run("circ_lik", mode="likelihood")[0]["metrics"]["counts"]
    server.shutdown()

    def passes(c):
        share = 100 * c["passes_saved"] / c["passes_full"]
        return f"{c['passes_run']} / {c['passes_full']} (saved {c['passes_saved']}, {share:.0f}%)"

    j1s, j2s = j1.stats, j2.stats
    rows = [
        ("items", f"{n}"),
        ("generate (free-form, max 16 new tokens) items/s", f"{n / t_gen:.2f}"),
        ("likelihood (option scoring) items/s", f"{n / t_lik:.2f}"),
        ("likelihood / generate speed ratio", f"{t_gen / t_lik:.2f}x"),
        ("judge requests, first run", f"{j1s['requests']} ({calls_first} HTTP calls)"),
        (
            "judge requests, rerun (shared cache)",
            f"{j2s['requests']} ({calls_rerun} HTTP calls, {j2s['cache_hits']} hits)",
        ),
        ("judge calls saved by the cache", f"{calls_first - calls_rerun} of {calls_first}"),
        ("CircularEval passes run / full (generate)", passes(c)),
        ("CircularEval passes run / full (likelihood)", passes(lc)),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"bench_eval: tiny Qwen2.5-Omni thinker, torch threads={ns.threads}, batch_size={ns.batch_size}")
    for k, v in rows:
        print(f"  {k:<{width}}  {v}")


if __name__ == "__main__":
    main()
