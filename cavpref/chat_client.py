"""The one OpenAI-compatible chat client of the project: LLM judges, served models, LLM-written negatives.

It is core (data prep's COT-Stitch negatives use it as well as the evaluator), so it lives here; the
evaluator and the benchmark builders import it from here. Every judge (choice extraction, AURA / MMAR / TraceAV
scoring) and every endpoint-served model goes through ``ChatClient``, so retries, concurrency limits,
caching and key handling are written once. Design points:

- The API key is read from an environment variable named in the config and kept only in the request
  header: it is never part of ``describe()``, a cache entry, an error message or a result file.
- Transient failures (timeouts, connection errors, 408/429/5xx) are retried with exponential backoff,
  honouring ``Retry-After``; other 4xx and malformed replies fail at once. A failure is a
  ``ChatResult`` with ``error`` set — never an exception in the middle of a long run, never a guess.
- Successful replies are cached on disk (``cavpref.cache.SQLiteCache``: safe across threads and
  processes) under (model, sha256 of the request), so a rerun or a resumed run costs no judge calls.
  Identical requests in flight at once share one call (the later ones wait for it), so the number of
  calls a run makes does not depend on thread timing; requests that must each be answered (MMAR's raters)
  say so with a ``cache_tag``.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from cavpref.cache import CacheTable, SQLiteCache
from cavpref.redact import add_secret, public_url, redact, url_secrets

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


@dataclass
class ChatConfig:
    """Where and how to call an OpenAI-compatible ``/chat/completions`` endpoint.

    ``base_url`` and ``model`` fall back to ``{env_prefix}_BASE_URL`` / ``{env_prefix}_MODEL`` (then
    ``OPENAI_BASE_URL``); the key is read from ``api_key_env`` (then ``OPENAI_API_KEY``) when the client
    is built. No key is fine for local servers (vLLM without ``--api-key``).
    """

    base_url: str | None = None
    model: str | None = None
    api_key_env: str = "CAVPREF_JUDGE_API_KEY"
    env_prefix: str = "CAVPREF_JUDGE"
    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    max_concurrency: int = 8
    temperature: float = 0.0
    max_tokens: int = 32
    cache_path: str | None = None  # SQLite file; None disables the cache
    max_reply_bytes: int = 1 << 20  # a longer reply body is an error, never read (or stored) whole
    # once a request failed every attempt without reaching the server (connection refused, timeouts), later
    # requests fail at once instead of retrying each (prep's per-record calls to an endpoint that is down)
    give_up_when_down: bool = False
    extra_body: dict[str, Any] = field(default_factory=dict)

    def resolved(self) -> ChatConfig:
        env = os.environ
        base_url = self.base_url or env.get(f"{self.env_prefix}_BASE_URL") or env.get("OPENAI_BASE_URL")
        model = self.model or env.get(f"{self.env_prefix}_MODEL")
        if not base_url or not model:
            raise ValueError(
                f"chat client needs a base URL and a model: pass them or set "
                f"{self.env_prefix}_BASE_URL and {self.env_prefix}_MODEL"
            )
        out = ChatConfig(**{**self.__dict__, "base_url": base_url.rstrip("/"), "model": model})
        return out


@dataclass
class ChatResult:
    text: str | None
    error: str | None = None
    attempts: int = 0
    cached: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


def split_base_url(url: str) -> tuple[str, list[tuple[str, str]], tuple[str, str] | None]:
    """(URL without user info, query or fragment; its query parameters; (user, password) or None).

    The parameters go with every request (``?api-version=…`` after ``/chat/completions``, not before it),
    and the user info is not left in the URL, where httpx would turn it into a Basic ``Authorization``
    header that replaces the configured Bearer key."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    userinfo = (unquote(parts.username), unquote(parts.password or "")) if parts.username else None
    bare = urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))
    return bare, parse_qsl(parts.query, keep_blank_values=True), userinfo


def request_hash(messages: Sequence[dict], params: dict[str, Any], tag: str | None = None) -> str:
    """The cache key of a request; ``tag`` (never sent) tells apart identical requests that must each get
    their own reply, e.g. the five same-seed raters of MMAR's released script."""
    request = {"messages": list(messages), "params": params, **({"tag": tag} if tag is not None else {})}
    blob = json.dumps(request, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()


REPLIES = CacheTable(
    name="replies", namespace="model", key="hash", value="text", value_type="TEXT", stamp="created"
)  # the layout of the cache files written before cavpref.cache existed


class ChatCache(SQLiteCache):
    """(model, request hash) -> reply text, in one SQLite file shared by threads and processes."""

    def __init__(self, path: str | os.PathLike):
        super().__init__(path, REPLIES)


class ChatClient:
    """Thread-safe client; ``chat_many`` runs at most ``max_concurrency`` requests at once."""

    def __init__(self, config: ChatConfig):
        import httpx

        self.config = config.resolved()
        key = os.environ.get(self.config.api_key_env) or os.environ.get("OPENAI_API_KEY")
        for secret in [key, *url_secrets(self.config.base_url)]:  # a server may echo them in an error body
            add_secret(secret)
        # a key read with a trailing newline / carriage return is not a header value
        key = (key or "").strip()
        base_url, self._params, userinfo = split_base_url(self.config.base_url)
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._http = httpx.Client(
            base_url=base_url,
            headers=headers,
            # URL user info only stands in for a key that is not configured (it never replaces one)
            auth=httpx.BasicAuth(*userinfo) if userinfo and not key else None,
            timeout=self.config.timeout_s,
            limits=httpx.Limits(max_connections=self.config.max_concurrency),
        )
        self._httpx = httpx
        self.cache = ChatCache(self.config.cache_path) if self.config.cache_path else None
        self._lock = threading.Lock()
        self._down: str | None = None  # why the endpoint counts as down (give_up_when_down)
        self._inflight: dict[str, Future] = {}  # cache key -> the call answering it (identical requests wait)
        self.stats = {"requests": 0, "http_calls": 0, "cache_hits": 0, "retries": 0, "failures": 0}

    def describe(self) -> dict[str, Any]:
        """What results files record about this client (never the key)."""
        return {
            "model": self.config.model,
            "base_url": public_url(self.config.base_url),
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
        }

    def _count(self, name: str, n: int = 1) -> None:
        with self._lock:
            self.stats[name] += n

    def chat(self, messages: Sequence[dict], *, cache_tag: str | None = None, **params: Any) -> ChatResult:
        """One chat completion. ``params`` override temperature / max_tokens / extra body fields.
        ``cache_tag`` goes into the cache key only: identical requests with different tags are separate
        calls, each cached on its own (so how many calls a run makes does not depend on thread timing)."""
        body_params = {
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            **self.config.extra_body,
            **params,
        }
        key = request_hash(messages, body_params, cache_tag)
        self._count("requests")
        if self.cache is None:
            return self._call(messages, body_params, None)
        with self._lock:
            running = self._inflight.get(key)
            if running is None:
                running = self._inflight[key] = Future()
                owner = True
            else:
                owner = False
        if not owner:  # the same request is being answered: its reply, as from the cache
            shared = running.result()
            self._count("cache_hits")
            return ChatResult(shared.text, shared.error, 0, cached=shared.ok)
        try:
            hit = self.cache.get(self.config.model, key)
            if hit is not None:
                self._count("cache_hits")
                result = ChatResult(hit, attempts=0, cached=True)
            else:
                result = self._call(messages, body_params, key)
        except BaseException as err:
            result = ChatResult(None, f"{type(err).__name__}: {err}")
            raise
        finally:
            with self._lock:
                del self._inflight[key]
            running.set_result(result)
        return result

    def _call(self, messages: Sequence[dict], body_params: dict[str, Any], key: str | None) -> ChatResult:
        result = self._post({"model": self.config.model, "messages": list(messages), **body_params})
        if result.ok and key is not None:
            self.cache.put(self.config.model, key, result.text)
        if not result.ok:
            self._count("failures")
        return result

    def chat_many(
        self, requests: Sequence[Sequence[dict]], *, desc: str | None = None, **params: Any
    ) -> list[ChatResult]:
        """``chat`` over many message lists, bounded concurrency, results in input order."""
        if not requests:
            return []
        from tqdm.auto import tqdm

        with ThreadPoolExecutor(max_workers=self.config.max_concurrency) as pool:
            futures = [pool.submit(self.chat, m, **params) for m in requests]
            bar = tqdm(futures, desc=desc or "chat", disable=len(futures) < 32, leave=False)
            return [f.result() for f in bar]

    def _post(self, body: dict[str, Any]) -> ChatResult:
        result = self._post_once(body)
        result.error = redact(result.error)
        return result

    def _post_once(self, body: dict[str, Any]) -> ChatResult:
        cfg, httpx = self.config, self._httpx
        if self._down is not None:
            return ChatResult(None, f"not sent: the endpoint is down ({self._down})", 0)
        error, unreachable = "no attempt made", True
        for attempt in range(cfg.max_retries + 1):
            if attempt:
                self._count("retries")
            wait = None
            self._count("http_calls")
            try:
                resp = self._post_capped(body)
            except _TooLarge as err:
                return ChatResult(None, f"malformed reply: {err}", attempt + 1)
            except httpx.TimeoutException as err:
                error = f"timeout after {cfg.timeout_s}s ({type(err).__name__})"
            except httpx.TransportError as err:
                error = f"connection error ({type(err).__name__}: {err})"
            else:
                unreachable = False
                if resp.status_code == 200:
                    text, problem = _reply_text(resp)
                    if problem:
                        return ChatResult(None, f"malformed reply: {problem}", attempt + 1)
                    return ChatResult(text, None, attempt + 1)
                error = f"HTTP {resp.status_code}: {resp.text[:200]}"
                if resp.status_code not in RETRY_STATUS:
                    return ChatResult(None, error, attempt + 1)
                wait = _retry_after(resp)
            if attempt < cfg.max_retries:
                delay = cfg.backoff_s * (2**attempt) if wait is None else wait
                time.sleep(min(delay, cfg.max_backoff_s))
        error = f"gave up after {cfg.max_retries + 1} attempts: {error}"
        if cfg.give_up_when_down and unreachable:
            self._down = error
        return ChatResult(None, error, cfg.max_retries + 1)

    def _post_capped(self, body: dict[str, Any]):
        """POST and read the reply, at most ``max_reply_bytes`` of it (a runaway server must not fill memory,
        the records or the cache); ``_TooLarge`` past that. ``timeout_s`` bounds the whole reply, not each
        read: a server that trickles a byte every half second times out like one that never answers."""
        cap, httpx = self.config.max_reply_bytes, self._httpx
        deadline = time.monotonic() + self.config.timeout_s
        with self._http.stream("POST", "/chat/completions", json=body, params=self._params) as resp:
            size = int(resp.headers.get("content-length") or 0)
            if cap and size > cap:
                raise _TooLarge(f"reply of {size} bytes is larger than {cap} bytes (max_reply_bytes)")
            data = bytearray()
            for chunk in resp.iter_bytes():
                data += chunk
                if cap and len(data) > cap:
                    raise _TooLarge(f"reply is larger than {cap} bytes (max_reply_bytes)")
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout(f"reply incomplete after {self.config.timeout_s}s")
            resp._content = bytes(data)  # the body as read, so .text / .json() work as after a plain post
        return resp

    def close(self) -> None:
        self._http.close()
        if self.cache is not None:
            self.cache.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _TooLarge(Exception):
    """A reply body over ``max_reply_bytes``."""


def _retry_after(resp) -> float | None:
    value = resp.headers.get("retry-after")
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def _reply_text(resp) -> tuple[str | None, str | None]:
    """(text, None) or (None, what is wrong with the reply)."""
    try:
        data = resp.json()
    except ValueError:
        return None, f"not JSON: {resp.text[:120]!r}"
    try:
        content = data["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None, f"no choices[0].message.content in {json.dumps(data)[:160]}"
    if isinstance(content, list):  # some servers return content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        return None, f"content is {type(content).__name__}, not text"
    return content, None
