"""Loopback OpenAI-compatible server shared by the evaluation tests (judges and endpoint-served models).

A helper module, not a test file: the evaluation tests import it as ``tests.helpers.judge_server``, so no
test file imports another. The server is real HTTP on 127.0.0.1 — the clients under
test go through their whole transport path (headers, retries, timeouts), nothing is patched.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def completion(text):
    """A minimal ``/chat/completions`` reply body whose message content is ``text``."""
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}}],
    }


class LoopbackServer:
    """A real OpenAI-compatible endpoint on 127.0.0.1. ``reply(body, n)`` -> (status, headers, payload,
    delay_s); payload is a dict (sent as JSON) or raw bytes. Records every request and the peak number of
    requests in flight."""

    def __init__(self, reply):
        self.reply, self.requests, self.inflight, self.max_inflight = reply, [], 0, 0
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                    n = len(outer.requests)
                    outer.inflight += 1
                    outer.max_inflight = max(outer.max_inflight, outer.inflight)
                status, headers, payload, delay = outer.reply(body, n)
                time.sleep(delay)
                with outer.lock:  # before replying: the client may send its next request at once
                    outer.inflight -= 1
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def endpoint_client(server: LoopbackServer, model: str = "m"):
    """A chat client for ``server`` as ``cavpref eval --model URL`` builds one (its key read from
    ``CAVPREF_ENDPOINT_API_KEY``), with no retries: a test's scripted replies are each asked once."""
    from cavpref.chat_client import ChatClient, ChatConfig

    return ChatClient(
        ChatConfig(
            base_url=server.url,
            model=model,
            env_prefix="CAVPREF_ENDPOINT",
            api_key_env="CAVPREF_ENDPOINT_API_KEY",
            max_retries=0,
        )
    )


def publish(server: LoopbackServer, url_file: str) -> None:
    """Write ``server``'s base URL to ``url_file`` (atomically: a waiting shell never reads half of it), then
    serve until killed: the stand-in for a served model in the docs' examples (docs/index.md, "Examples that
    run"), so the client's whole HTTP path runs and only the model is fixed."""
    tmp = Path(f"{url_file}.tmp")
    tmp.write_text(server.url)
    tmp.replace(url_file)
    threading.Event().wait()


if (
    __name__ == "__main__"
):  # python tests/helpers/judge_server.py URL_FILE [REPLY]: every request answered REPLY
    reply = sys.argv[2] if len(sys.argv) > 2 else "A"
    publish(LoopbackServer(lambda body, n: (200, {}, completion(reply), 0)), sys.argv[1])
