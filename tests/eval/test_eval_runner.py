"""The shared runner with a real tiny Qwen2.5-Omni thinker (built from a config, nothing downloaded), real mp4
media and a real judge server on loopback: records, resume after a kill, skips, sharding, likelihood mode."""

import json

import numpy as np
import pytest

from cavpref.data import BenchmarkItem
from cavpref.eval.backends import ModelIOBackend, model_fingerprint
from cavpref.eval.pipeline import EvalArgs, evaluate
from cavpref.eval.runner import load_records
from cavpref.media.spec import clip, concat, drop_video, mute, to_json
from cavpref.media.write import write_mp4
from tests.helpers.judge_server import LoopbackServer, completion

QUESTION = "Which instrument is playing?"
SECRET = "sk-runner-secret-never-written"


@pytest.fixture(scope="module")
def backend(tmp_path_factory):
    from cavpref.models import build_tiny_qwen_omni, load_model_io

    path = build_tiny_qwen_omni(tmp_path_factory.mktemp("tiny"))
    return ModelIOBackend(load_model_io(str(path)), generation={"max_new_tokens": 5})


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    rng = np.random.default_rng(0)
    t = np.arange(16000) / 16000
    for name, hz in (("a.mp4", 330), ("b.mp4", 550)):
        write_mp4(
            root / name,
            rng.integers(0, 255, (4, 56, 56, 3), dtype=np.uint8),
            4.0,
            (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32),
        )
    a, b = clip("a.mp4"), clip("b.mp4")
    four = {"A": "qxa", "B": "qxb", "C": "qxc", "D": "None of the above"}
    items = [
        BenchmarkItem(
            "m1", "MCIT", "avqa", "Existential", QUESTION, four, "D", "instruction", 0, to_json(a), "D"
        ),
        BenchmarkItem(
            "m2", "MAT", "music_avqa", "Count", QUESTION, {"A": "qya", "B": "qyb"}, None, "base", 1, mute(a)
        ),
        BenchmarkItem(
            "m3",
            "MVT",
            "music_avqa",
            "Temporal",
            QUESTION,
            {"A": "qza", "B": "qzb", "C": "qzc"},
            "A",
            "instruction",
            0,
            drop_video(b),
        ),
        BenchmarkItem(
            "m4",
            "CAT",
            "audioset",
            "Temporal",
            QUESTION,
            {"A": "qwa", "B": "qwb", "C": "qwc"},
            "B",
            "instruction",
            2,
            concat(a, b),
        ),
        BenchmarkItem(
            "m5",
            "COT-Stitch",
            "audioset",
            "Temporal",
            QUESTION,
            {"A": "qva", "B": "qvb"},
            "A",
            "instruction",
            0,
            concat(b, a),
        ),
        BenchmarkItem(
            "m6",
            "MVIT",
            "avqa",
            "Existential",
            QUESTION,
            {"A": "qua", "B": "qub"},
            "A",
            "instruction",
            0,
            to_json(clip("missing.mp4")),
        ),
        BenchmarkItem(
            "m7",
            "ICIT",
            "avqa",
            "Existential",
            "Is <|AUDIO|> loud?",
            {"A": "qta", "B": "qtb"},
            "A",
            "instruction",
            0,
            to_json(a),
        ),
    ]
    (root / "items.jsonl").write_text("".join(json.dumps(i.to_row()) + "\n" for i in items))
    return root


@pytest.fixture(scope="module")
def judge_server():
    server = LoopbackServer(lambda body, n: (200, {}, completion("A"), 0))  # a judge that always says "A"
    yield server
    server.close()


@pytest.fixture(scope="module")
def judge_url(judge_server):
    return judge_server.url


def args_for(bench, out, judge_url=None, **kw):
    extra = {"judge_model": "judge-a", "judge_base_url": judge_url} if judge_url else {}
    return EvalArgs(data=str(bench / "items.jsonl"), output=str(out), num_frames=2, **extra, **kw)


def vanilla(**kw):
    """AVTrustBench's own key (its Options), next to the shared EvalArgs."""
    return {"vanilla": True, **kw}


class Dying:
    """The real backend, interrupted (like Ctrl-C) on its ``after``-th generate call."""

    def __init__(self, backend, after):
        self.backend, self.after, self.calls = backend, after, 0
        self.fingerprint, self.describe = backend.fingerprint, backend.describe

    def generate(self, *a):
        self.calls += 1
        if self.calls >= self.after:
            raise KeyboardInterrupt
        return self.backend.generate(*a)


def records_of(run):
    return [r for r in load_records(run).values() if r["status"] == "ok"]


def test_generate_run_records_resume_and_skips(backend, bench, judge_server, tmp_path, monkeypatch):
    judge_url = judge_server.url
    monkeypatch.setenv("CAVPREF_JUDGE_API_KEY", SECRET)
    res = evaluate(args_for(bench, tmp_path / "a", judge_url, batch_size=1), backend=backend, rank=0, world=1)
    c = res["metrics"]["counts"]
    assert (c["items"], c["evaluated"], c["skipped"], c["incomplete"]) == (7, 5, 2, 0)
    assert set(c["skip_reasons"]) == {"media: MediaError", "model input: ModelIOError"}
    recs = records_of(tmp_path / "a")
    assert {
        "key",
        "item_id",
        "rotation",
        "prompt_id",
        "response",
        "choice",
        "method",
        "rule",
        "correct",
    } <= set(recs[0])
    assert all(
        isinstance(r["response"], str) and r["method"] in ("heuristic", "judge", "unparsed") for r in recs
    )
    for r in recs:
        if r["method"] == "judge":
            assert (
                r["judge"]["model"] == "judge-a" and r["judge"]["prompt_version"] == "avtrustbench-choice/v1"
            )
    by_item = {}
    for r in sorted(recs, key=lambda r: r["rotation"]):
        by_item.setdefault(r["item_id"], []).append(r["correct"])
    for item_id, passes in by_item.items():  # early stopping: only the last pass may be wrong
        assert all(passes[:-1]), (item_id, passes)
    assert sum(map(len, by_item.values())) == c["passes_run"]
    assert (tmp_path / "a" / "report.md").is_file() and (
        tmp_path / "a" / "plots" / "dimensions_radar.png"
    ).is_file()
    assert "judge_cache.sqlite" in {p.name for p in (tmp_path / "a").iterdir()}
    # the judge key was used (as the Authorization header) but is in no file of the run folder
    assert any(r["method"] == "judge" for r in recs)
    assert any(r["headers"].get("Authorization") == f"Bearer {SECRET}" for r in judge_server.requests)
    for path in (tmp_path / "a").rglob("*"):
        assert not path.is_file() or SECRET.encode() not in path.read_bytes(), path

    # the same run, killed on its second model call, then resumed with the same command
    args_b = args_for(bench, tmp_path / "b", judge_url, batch_size=1)
    with pytest.raises(KeyboardInterrupt):
        evaluate(args_b, backend=Dying(backend, after=2), rank=0, world=1)
    with open(tmp_path / "b" / "records.rank0.jsonl", "a") as fh:
        fh.write('{"key": "torn')  # the killed writer's last line
    resumed = evaluate(args_b, backend=backend, rank=0, world=1)
    assert resumed["metrics"] == res["metrics"]
    log = json.loads((tmp_path / "b" / "run_log.rank0.json").read_text())
    assert log["passes_reused"] == 1 and log["passes_computed"] == c["passes_run"] - 1
    again = evaluate(args_b, backend=backend, rank=0, world=1)
    log = json.loads((tmp_path / "b" / "run_log.rank0.json").read_text())
    assert (
        again["metrics"] == res["metrics"]
        and log["passes_computed"] == 0
        and log["judge_calls"]["http_calls"] == 0
    )
    # skipped items are retried (and fail again) rather than served from the records
    assert log["skipped"] == 2


def test_likelihood_mode_and_data_parallel_shards(backend, bench, tmp_path):
    single = evaluate(
        args_for(bench, tmp_path / "one", mode="likelihood", batch_size=4), backend=backend, rank=0, world=1
    )
    for rank in (1, 0):  # any order; the main process (rank 0) gathers every rank's records
        sharded = evaluate(
            args_for(bench, tmp_path / "two", mode="likelihood", batch_size=3),
            backend=backend,
            rank=rank,
            world=2,
        )
    assert sharded["metrics"] == single["metrics"] and single["mode"] == "likelihood"
    assert sorted(p.name for p in (tmp_path / "two").glob("records.rank*.jsonl")) == [
        "records.rank0.jsonl",
        "records.rank1.jsonl",
    ]
    recs = records_of(tmp_path / "one")
    assert all(r["method"] == "likelihood" and r["choice"] is not None for r in recs)
    mat = [r for r in recs if r["item_id"] == "m2"]
    assert len(mat[0]["scores"]["sum"]) == 3  # two options + the MAT abstention ("The audio is missing.")
    assert mat[0]["scores"]["letter"][2] is None  # ... which has no letter
    assert single["metrics"]["overall"]["unparsed_rate"] == 0.0


def test_likelihood_reports_every_option_score_and_switching_reruns_nothing(backend, bench, tmp_path):
    """All three protocols are read from the same passes (results.json ``by_option_score``, report.md); the
    headline follows ``option_score``, and switching it re-reads the recorded scores without a model call."""
    first = evaluate(args_for(bench, tmp_path, mode="likelihood"), backend=backend, rank=0, world=1)
    by = first["by_option_score"]
    assert set(by) == {"sum", "per_token", "letter"}
    for key in ("overall", "settings", "counts", "trust"):
        assert first["metrics"][key] == by["per_token"][key]  # the default headline: per token (issue 56)
    recs = records_of(tmp_path)
    assert all(set(r["choices"]) == set(by) and r["option_score"] == "per_token" for r in recs)
    again = evaluate(
        args_for(bench, tmp_path, mode="likelihood", option_score="letter"), backend=backend, rank=0, world=1
    )
    log = json.loads((tmp_path / "run_log.rank0.json").read_text())
    assert log["passes_computed"] == 0 and log["passes_rescored"] == len(recs)
    assert again["by_option_score"] == by and again["evaluation"]["option_score"] == "letter"
    for key in ("overall", "settings", "trust"):
        assert again["metrics"][key] == by["letter"][key]
    assert "## Option scoring protocols" in (tmp_path / "report.md").read_text()


def test_fingerprint_and_keys_follow_the_weights(backend, bench, tmp_path):
    import torch

    before = backend.fingerprint
    param = next(backend.model.parameters())
    with torch.no_grad():
        param.view(-1)[0] += 1e-3
        changed = model_fingerprint(backend.model_io, backend.model)
        param.view(-1)[0] -= 1e-3
    assert changed != before and model_fingerprint(backend.model_io, backend.model) == before


def test_changed_generation_config_or_prompt_is_never_served_stale_answers(backend, bench, tmp_path):
    """The record key holds the model fingerprint, the generation config and the prompt: the same run folder
    with any of them changed recomputes every pass; unchanged, it recomputes none."""

    def run(backend_, **options):
        args = args_for(bench, tmp_path, tasks=["CAT", "MVT"])
        evaluate(args, vanilla(**options), backend=backend_, rank=0, world=1)
        log = json.loads((tmp_path / "run_log.rank0.json").read_text())
        return log["passes_reused"], log["passes_computed"]

    assert run(backend) == (0, 2)
    shorter = ModelIOBackend(backend.model_io, generation={"max_new_tokens": 2})
    assert shorter.fingerprint == backend.fingerprint  # same weights: only the generation config differs
    assert run(shorter) == (0, 2)
    assert run(backend, post_prompt="Answer with the option's letter.") == (0, 2)
    assert run(backend) == (2, 0)


def test_endpoint_model_receives_the_decoded_media(bench, tmp_path):
    """An OpenAI-compatible server on loopback plays the served model; what it receives must decode back to
    the frames and samples the local adapters see. A server error is a recorded per-item skip."""
    import base64
    import io

    import av
    import soundfile as sf

    from cavpref.chat_client import ChatClient, ChatConfig
    from cavpref.eval.backends import EndpointBackend

    seen = []

    def reply(body, n):
        parts = body["messages"][0]["content"]
        seen.append({p["type"]: p for p in parts})
        if "qwc" in parts[-1]["text"]:  # the CAT item: the server fails on it
            return 500, {}, {"error": "overloaded"}, 0
        return 200, {}, completion("B"), 0

    server = LoopbackServer(reply)
    try:
        client = ChatClient(
            ChatConfig(base_url=server.url, model="served-omni", max_retries=0, env_prefix="X")
        )
        res = evaluate(
            args_for(bench, tmp_path, tasks=["MCIT", "MAT", "MVT", "CAT"]),
            vanilla(),
            backend=EndpointBackend(client),
            rank=0,
            world=1,
        )
    finally:
        server.close()
    assert res["model"]["model"] == "served-omni" and res["model"]["media_format"] == "mp4"
    assert res["metrics"]["counts"]["skip_reasons"] == {"endpoint: gave up after 1 attempts": 1}
    full = next(s for s in seen if "qxa" in s["text"]["text"])  # MCIT: video and audio of a.mp4
    assert full["text"]["text"].startswith(QUESTION + "\nA. qxa")
    url = full["video_url"]["video_url"]["url"]
    assert url.startswith("data:video/mp4;base64,")
    with av.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))) as container:
        frames = [f.to_ndarray(format="rgb24") for f in container.decode(video=0)]
    assert len(frames) == 2 and frames[0].shape == (56, 56, 3)  # num_frames=2, as decoded for local adapters
    wav, sr = sf.read(io.BytesIO(base64.b64decode(full["input_audio"]["input_audio"]["data"])))
    assert (
        full["input_audio"]["input_audio"]["format"] == "wav" and sr == 16000 and abs(len(wav) - 16000) < 1200
    )
    kinds = [set(s) for s in seen]
    assert {"video_url", "text"} in kinds and {"input_audio", "text"} in kinds  # MAT (muted), MVT (no video)


def test_judge_outage_is_recorded_then_rejudged_without_regenerating(backend, bench, judge_url, tmp_path):
    down = LoopbackServer(lambda body, n: (503, {}, {"error": "down"}, 0))
    try:
        args = args_for(bench, tmp_path, down.url, tasks=["MCIT", "MAT", "MVT"], judge_max_retries=0)
        first = evaluate(args, vanilla(), backend=backend, rank=0, world=1)
    finally:
        down.close()
    errors = first["metrics"]["counts"]["unparsed_reasons"].get("judge error", 0)
    assert errors >= 1  # the tiny model's free text names none of the nonsense options
    again = evaluate(
        args_for(bench, tmp_path, judge_url, tasks=["MCIT", "MAT", "MVT"]),
        vanilla(),
        backend=backend,
        rank=0,
        world=1,
    )
    log = json.loads((tmp_path / "run_log.rank0.json").read_text())
    assert log["passes_computed"] == 0 and log["passes_rescored"] == errors
    assert "judge error" not in again["metrics"]["counts"]["unparsed_reasons"]
    judged = again["metrics"]["overall"]["judged_rate"] * again["metrics"]["counts"]["passes_run"] / 100
    assert round(judged) == errors  # each re-judged pass now has the judge's letter


def test_local_model_takes_the_training_audio_length(tmp_path):
    """``audio_max_seconds`` reaches the local model's I/O (the quickstart trains and evaluates at 4 s): a
    4-s clip gives the same number of log-mel frames, and padding is to 4 s, not the 30-s default."""
    from cavpref.eval.pipeline import build_backend
    from cavpref.models import build_tiny_qwen_omni

    path = str(build_tiny_qwen_omni(tmp_path / "tiny"))
    default = build_backend(EvalArgs(model=path, data="x", output=str(tmp_path / "o")))
    short = build_backend(EvalArgs(model=path, data="x", output=str(tmp_path / "o"), audio_max_seconds=4.0))
    assert default.model_io.audio_samples == 30 * 16000 and short.model_io.audio_samples == 4 * 16000


def test_sampled_passes_are_seeded_and_reproducible(backend):
    """MMAR's inference runs sample: the same seed and batch give the same answers, another seed other
    answers, and greedy decoding is untouched."""
    prompts, media, keys = ["Say something.", "Say more."], [None, None], ["k1", "k2"]
    greedy = backend.generate(prompts, media, keys)
    assert backend.generate(prompts, media, keys) == greedy

    def sampled(seed):
        return backend.generate(
            prompts, media, keys, sampling={"do_sample": True, "temperature": 1.5, "seed": seed}
        )

    first = sampled(1)
    assert sampled(1) == first
    assert any(sampled(s) != first for s in (2, 3, 4))
    assert backend.generate(prompts, media, keys) == greedy
