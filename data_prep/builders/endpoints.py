"""The model roles of a builder: one OpenAI-compatible endpoint each, all through ``ChatClient``.

A builder's endpoint arguments subclass ``EndpointArgs`` and declare, per role, ``<role>_model`` (required
when the role is used) and ``<role>_base_url`` (default: ``base_url``); the roles are read from those field
names, never listed by hand. Every client shares the build's one SQLite reply cache
(``<out>/work/cache.sqlite``), so a killed or repeated build sends no request that already succeeded; its
counters (requests, HTTP calls, cache hits, failures) go into the build's stats per role.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from cavpref.chat_client import ChatClient, ChatConfig
from cavpref.chat_json import ask
from cavpref.data_prep.builders.work import BuildError, StepFailed, setting
from cavpref.data_prep.tasks.llm import failure_kind
from cavpref.media.chat_parts import MEDIA_FORMATS, content_parts


def role_model(what: str) -> Any:
    """The ``<role>_model`` field of a role doing ``what``."""
    return setting(f"model name of the {what} (required)", default=None)


def role_url() -> Any:
    """The ``<role>_base_url`` field of a role."""
    return setting("base URL of this role's endpoint (default: --base_url)", default=None)


@dataclass
class EndpointArgs:
    """What every role shares; subclasses add ``<role>_model`` / ``<role>_base_url`` per role."""

    base_url: str | None = setting(
        "OpenAI-compatible base URL of every role without its own <role>_base_url (default: $OPENAI_BASE_URL)",
        default=None,
    )
    api_key_env: str = setting(
        "environment variable holding the API key (never written anywhere)", default="OPENAI_API_KEY"
    )
    timeout_s: float = setting(
        "seconds before one HTTP request times out (then it is retried)", default=120.0
    )
    max_retries: int = setting(
        "retries of a request after a timeout, a connection error or HTTP 408/429/5xx", default=4
    )
    max_concurrency: int = setting("requests in flight at once, per role", default=8)
    temperature: float = setting(
        "sampling temperature of every role (0: greedy, as both papers' scripts)", default=0.0
    )
    parse_retries: int = setting("re-asks (another seed) when a reply is not the JSON asked for", default=2)
    media_format: str = setting(
        f"how frames are sent to the captioners: one of {MEDIA_FORMATS}", default="mp4"
    )
    caption_frames: int = setting("frames sampled uniformly from each clip sent to a captioner", default=16)
    frame_height: int | None = setting(
        "resize sent frames to this height (None: the clip's own size)", default=None
    )
    frame_width: int | None = setting(
        "resize sent frames to this width (None: the clip's own size)", default=None
    )

    def roles(self) -> tuple[str, ...]:
        """The roles declared by the subclass: every ``<role>_model`` field."""
        return tuple(f.name[: -len("_model")] for f in dataclasses.fields(self) if f.name.endswith("_model"))

    def check(self) -> None:
        """Every role has a model and the settings are usable, before a build starts (ValueError naming
        the keys)."""
        missing = [f"--{role}_model" for role in self.roles() if not getattr(self, f"{role}_model")]
        if missing:
            raise ValueError(f"every model role needs a model: set {' '.join(missing)} (and --base_url)")
        if self.media_format not in MEDIA_FORMATS:
            raise ValueError(f"media_format must be one of {MEDIA_FORMATS}, got {self.media_format!r}")
        self.frame_size()

    def role_urls(self) -> dict[str, list[str]]:
        """Each role's server (``<role>_base_url``, else ``base_url``, else ``$OPENAI_BASE_URL``) -> its roles."""
        import os

        out: dict[str, list[str]] = {}
        for role in self.roles():
            url = (
                getattr(self, f"{role}_base_url", None) or self.base_url or os.environ.get("OPENAI_BASE_URL")
            )
            if not url:
                raise ValueError(f"the {role} role has no server: set --base_url (or --{role}_base_url)")
            out.setdefault(url.rstrip("/"), []).append(role)
        return out

    def check_servers(self) -> None:
        """Every role's server answers before a build starts (``BuildError`` naming the server and its roles):
        a build against a server that is not listening would otherwise retry every unit and end "0 questions
        generated" with exit 0. One GET of ``<base_url>/models`` each, no retries; any HTTP answer (even an
        error status: not every server lists its models) counts as listening, only a connection that fails or
        times out does not."""
        import httpx

        from cavpref.chat_client import public_url, split_base_url

        for url, roles in self.role_urls().items():
            bare, params, _ = split_base_url(url)
            try:
                httpx.get(f"{bare}/models", params=params, timeout=min(self.timeout_s, 10.0))
            except httpx.HTTPError as err:
                what = (
                    "timed out" if isinstance(err, httpx.TimeoutException) else f"{type(err).__name__}: {err}"
                )
                flags = " / ".join(f"--{r}_base_url" for r in roles)
                raise BuildError(
                    f"the {', '.join(roles)} role server {public_url(url)} does not answer ({what}): start it, or "
                    f"point --base_url / {flags} at a running OpenAI-compatible server"
                ) from None

    def frame_size(self) -> tuple[int, int] | None:
        if (self.frame_height is None) != (self.frame_width is None):
            raise ValueError("set both frame_height and frame_width, or neither")
        return None if self.frame_height is None else (self.frame_height, self.frame_width)

    def client(self, role: str, cache_path: str, max_tokens: int) -> ChatClient:
        """The ``ChatClient`` of ``role`` (its model is required), caching into ``cache_path``."""
        if role not in self.roles():
            raise ValueError(f"unknown role {role!r} (roles: {self.roles()})")
        model = getattr(self, f"{role}_model")
        if not model:
            raise ValueError(
                f"the {role} role needs a model: set --{role}_model (and --{role}_base_url or --base_url)"
            )
        if self.media_format not in MEDIA_FORMATS:
            raise ValueError(f"media_format must be one of {MEDIA_FORMATS}, got {self.media_format!r}")
        return ChatClient(
            ChatConfig(
                base_url=getattr(self, f"{role}_base_url", None) or self.base_url,
                model=model,
                api_key_env=self.api_key_env,
                env_prefix="OPENAI",
                timeout_s=self.timeout_s,
                max_retries=self.max_retries,
                max_concurrency=self.max_concurrency,
                temperature=self.temperature,
                max_tokens=max_tokens,
                cache_path=cache_path,
            )
        )


def media_message(media, prompt: str, media_format: str) -> list[dict]:
    """One user message: the media's content parts (``cavpref.media.chat_parts``), then the prompt."""
    return [
        {"role": "user", "content": content_parts(media, media_format) + [{"type": "text", "text": prompt}]}
    ]


def text_messages(system: str, user: str) -> list[dict]:
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def nonempty_text(text: str | None) -> str:
    """The ``parse`` of a free-text role (captions): the stripped reply; an empty one is unusable."""
    if not text or not text.strip():
        raise ValueError("empty reply")
    return text.strip()


def ask_one(client: ChatClient, messages: list[dict], parse, *, max_tokens: int, retries: int) -> Any:
    """One request through ``cavpref.chat_json.ask`` (re-asked with another seed while the reply does not
    parse); a failed call or a reply still unusable is ``StepFailed`` with a countable reason (HTTP 500,
    timeout, connection error, malformed reply)."""
    (reply,) = ask(
        client, [(messages, None)], lambda _i, text: parse(text), max_tokens=max_tokens, retries=retries
    )
    if reply.error is not None:
        raise StepFailed(failure_kind(reply.error), reply.error)
    return reply.value


def call_stats(clients: dict[str, ChatClient], videos: int) -> dict[str, Any]:
    """Per role: this run's counters, the replies the build's cache holds for its model (every call that
    ever succeeded, whatever run made it), and those per usable video. Closes the clients."""
    out = {}
    for role, client in clients.items():
        stored = client.cache.count(client.config.model) if client.cache is not None else None
        out[role] = {
            "model": client.config.model,
            "this_run": dict(client.stats),
            "replies_in_cache": stored,
            "per_video": None if stored is None or not videos else round(stored / videos, 2),
        }
        client.close()
    return out
