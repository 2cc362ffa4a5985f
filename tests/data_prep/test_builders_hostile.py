"""`cavpref build aura` against misbehaving role servers and speech models (issue 54 #3 and the third hostile
pass, docs/reliability.md): servers that are not there, never answer, answer HTTP 500, answer garbage, answer
too slowly or close the connection mid-reply; a Whisper that is no model, a typo, or a Hub id with no network.
Real loopback servers (``tests/builder_servers.py``'s ``RoleServer`` and raw sockets), the synthetic world's
clips, TSA only (no transcript: no Whisper) unless a case is about Whisper."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from cavpref.apps.cli import main as cavpref
from cavpref.data_prep.builders.asr import Transcriber
from cavpref.data_prep.builders.work import BuildError
from cavpref.data_prep.synthetic import WorldConfig, generate_world
from cavpref.models.tiny import build_tiny_whisper
from tests.helpers.builder_servers import RoleServer, aura_answers
from tests.helpers.judge_server import LoopbackServer, completion


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile_aura")
    cfg = WorldConfig(
        out=str(base / "world"), seed=3, num_clips=2, avqa_clips=1, audioset_clips=1, duration=8.0, workers=1
    )
    generate_world(cfg)
    return base / "world" / "music_avqa" / "videos"


def argv(videos, out, url, *extra):
    return [
        "build", "aura", "--videos", str(videos), "--out", str(out), "--base_url", url,
        "--visual_model", "visual", "--audio_model", "audio", "--generator_model", "generator",
        "--tasks", "TSA", "--short_clip_s", "4", "--long_clip_s", "6", "--sync_shift_s", "2",
        "--caption_frames", "2", "--max_retries", "1", "--parse_retries", "1", *extra,
    ]  # fmt: skip


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "%|" not in line]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


# ----------------------------------------------------------------------------- servers that are not there


def test_no_server_listening_fails_fast_naming_it(videos, tmp_path, capsys):
    url, out = closed_port_url(), tmp_path / "out"
    t0 = time.perf_counter()
    assert cavpref(argv(videos, out, url)) == 2
    line = one_line(capsys)
    assert line.startswith(f"cavpref build aura: error: the visual, audio, generator role server {url} ")
    assert "does not answer (ConnectError" in line and "--base_url" in line
    assert time.perf_counter() - t0 < 15 and not (out / "work").exists()  # no stage ran, nothing retried
    server = RoleServer(aura_answers())  # the folder was released: the same command works once it runs
    try:
        assert cavpref(argv(videos, out, server.url)) == 0
    finally:
        server.close()


def test_an_unknown_host_fails_fast(videos, tmp_path, capsys):
    assert cavpref(argv(videos, tmp_path / "out", "http://no-such-host.invalid/v1")) == 2
    assert "role server http://no-such-host.invalid/v1 does not answer" in one_line(capsys)


def test_a_server_that_accepts_and_never_answers_times_out_up_front(videos, tmp_path, capsys):
    with socket.socket() as sock:  # listening, never accepting: the connection opens, no reply comes
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
        t0 = time.perf_counter()
        assert cavpref(argv(videos, tmp_path / "out", url, "--timeout_s", "1")) == 2
    assert "does not answer (timed out)" in one_line(capsys) and time.perf_counter() - t0 < 15


def test_only_the_generators_server_down_names_its_flag(videos, tmp_path, capsys):
    server, down = RoleServer(aura_answers()), closed_port_url()
    try:
        assert cavpref(argv(videos, tmp_path / "out", server.url, "--generator_base_url", down)) == 2
    finally:
        server.close()
    line = one_line(capsys)
    assert f"the generator role server {down} does not answer" in line and "--generator_base_url" in line
    assert not server.requests  # the captioners were not asked before the generator was found down


# ----------------------------------------------------------------------------- servers that misbehave mid-build


def stats_of(out):
    return json.loads((out / "stats.json").read_text())


def test_http_500_is_counted_and_the_summary_says_so(videos, tmp_path, capsys):
    healthy, down = RoleServer(aura_answers()), RoleServer(aura_answers(), fail=("generator",))
    out = tmp_path / "out"
    try:
        assert cavpref(argv(videos, out, healthy.url, "--generator_base_url", down.url)) == 0
    finally:
        healthy.close(), down.close()
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    assert printed == (
        f"cavpref build aura: 0 questions generated, 0 kept, 0 rejected; benchmark {out}/aura.jsonl, stats "
        f"{out}/stats.json; 2 units failed (generate HTTP 500 x2): run the same command again to retry them"
    )
    assert stats_of(out)["stages"]["generate"]["failed"] == {"HTTP 500": 2}


def test_a_reply_that_is_not_json_is_counted_as_malformed(videos, tmp_path, capsys):
    roles = aura_answers()

    def reply(body, n):
        if body["model"] == "generator":
            return 200, {"Content-Type": "application/json"}, b"<html>502 Bad Gateway</html>", 0
        return 200, {}, completion(roles[body["model"]](body)), 0

    server, out = LoopbackServer(reply), tmp_path / "out"
    try:
        assert cavpref(argv(videos, out, server.url)) == 0
    finally:
        server.close()
    assert stats_of(out)["stages"]["generate"]["failed"] == {"malformed reply": 2}
    assert "2 units failed (generate malformed reply x2)" in capsys.readouterr().out


def test_a_generator_that_writes_no_json_is_re_asked_then_counted(videos, tmp_path, capsys):
    answers = {**aura_answers(), "generator": lambda body: "Sure! Here are some great questions: ..."}
    server, out = RoleServer(answers), tmp_path / "out"
    try:
        assert cavpref(argv(videos, out, server.url)) == 0
        asked = [r for r in server.requests if r["body"]["model"] == "generator"]
    finally:
        server.close()
    assert len(asked) == 2 * (1 + 1)  # two clips, each asked once and re-asked parse_retries (1) times
    assert len({r["body"].get("seed") for r in asked}) == 2  # the re-ask is another seed
    assert stats_of(out)["stages"]["generate"]["failed"] == {"malformed reply": 2}


class HalfReply:
    """A server that sends the headers of a 200 reply and half its body, then closes the connection."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"
        self.posts = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                request = conn.recv(65536)
                if request.startswith(b"POST"):
                    self.posts += 1
                    body = json.dumps(completion("[]")).encode()
                    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
                    conn.sendall(head.encode() + body[: len(body) // 2])
                else:
                    conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")

    def close(self):
        self.sock.close()


def test_a_connection_closed_mid_reply_is_retried_counted_and_asked_again(videos, tmp_path, capsys):
    healthy, half, out = RoleServer(aura_answers()), HalfReply(), tmp_path / "out"
    try:
        assert cavpref(argv(videos, out, healthy.url, "--generator_base_url", half.url)) == 0
        failed = stats_of(out)["stages"]["generate"]["failed"]
        assert failed == {"connection error": 2} and half.posts == 2 * 2  # each call tried 1 + max_retries
        assert cavpref(argv(videos, out, healthy.url)) == 0  # the generator back: only its calls are made
    finally:
        healthy.close(), half.close()
    assert stats_of(out)["questions"]["kept"] == 2 and stats_of(out)["stages"]["visual"]["reused"] == 2


def test_a_server_slower_than_timeout_s_is_a_counted_timeout(videos, tmp_path):
    roles = aura_answers()

    def reply(body, n):
        delay = 3 if body["model"] == "generator" else 0
        return 200, {}, completion(roles[body["model"]](body)), delay

    server, out = LoopbackServer(reply), tmp_path / "out"
    try:
        assert cavpref(argv(videos, out, server.url, "--timeout_s", "1", "--max_retries", "0")) == 0
    finally:
        server.close()
    assert stats_of(out)["stages"]["generate"]["failed"] == {"timeout": 2}


# ----------------------------------------------------------------------------- the speech model


def whisper_argv(videos, out, url, model):
    return [*argv(videos, out, url), "--tasks", "CR", "--whisper_model", str(model)]


@pytest.mark.parametrize(
    ("model", "says"),
    [
        ("{videos}", "no config.json in that folder (not a Whisper model)"),
        ("{videos}/whisper-smal", "no such folder or Hub id"),
        ("whisper", "no such folder or Hub id"),
    ],
)
def test_a_whisper_that_is_no_model_is_one_line_before_any_caption(model, says, videos, tmp_path, capsys):
    server = RoleServer(aura_answers())
    try:
        assert cavpref(whisper_argv(videos, tmp_path / "out", server.url, model.format(videos=videos))) == 2
    finally:
        server.close()
    assert says in one_line(capsys) and not server.requests


def test_offline_with_an_uncached_hub_whisper_says_what_to_do(videos, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty_cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    server = RoleServer(aura_answers())
    t0 = time.perf_counter()
    try:
        assert cavpref(whisper_argv(videos, tmp_path / "out", server.url, "openai/whisper-small")) == 2
    finally:
        server.close()
    line = one_line(capsys)
    assert "not in the local Hugging Face cache and HF_HUB_OFFLINE is set" in line
    assert "`hf download openai/whisper-small`" in line and "cavpref model tiny-whisper --out DIR" in line
    assert time.perf_counter() - t0 < 15 and not server.requests


def test_an_unreachable_hub_is_one_check_not_minutes_of_retries(videos, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty_cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    hub = closed_port_url().removesuffix("/v1")
    monkeypatch.setenv("HF_ENDPOINT", hub)
    with pytest.raises(BuildError, match=rf"the Hub \({hub}\) cannot be reached \(ConnectError\)"):
        Transcriber("openai/whisper-small").check()


def test_a_cached_hub_whisper_loads_from_the_cache_alone(tmp_path, monkeypatch):
    """The model in the Hub cache layout (refs/main -> snapshots/<rev>/), no network, HF_HUB_OFFLINE set."""
    import numpy as np

    repo = tmp_path / "cache" / "models--cavpref-test--tiny-whisper"
    build_tiny_whisper(repo / "snapshots" / "0123abc")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0123abc")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", closed_port_url().removesuffix("/v1"))  # any request would fail
    transcriber = Transcriber("cavpref-test/tiny-whisper", max_new_tokens=4)
    transcriber.check()
    text = transcriber(np.zeros(16000, dtype=np.float32), 16000)
    assert isinstance(text, str) and transcriber._loaded is not None


def test_a_whisper_that_fails_to_load_fails_every_unit_at_once(tmp_path):
    import numpy as np

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "whisper"}')  # a config, no weights, no processor
    transcriber = Transcriber(str(broken))
    transcriber.check()
    with pytest.raises(OSError, match="cannot load") as first:
        transcriber(np.zeros(16000, dtype=np.float32), 16000)
    with pytest.raises(OSError) as second:
        transcriber(np.zeros(16000, dtype=np.float32), 16000)
    assert second.value is first.value  # the load is not tried (and its hub retries paid) per unit
