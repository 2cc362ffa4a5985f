"""Keep secrets out of everything the project writes or logs.

A key lives in an HTTP header, but a server may echo it back in an error body (401 / 500), and a user may
put credentials into a URL (``http://user:sk-…@host/v1``, ``?api_key=…``). Every client registers the
secrets it was configured with (``add_secret``), and the writers of records, logs and result files pass
what they write through ``redact``; URLs that go into result files go through ``public_url``.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "[REDACTED]"
_SECRETS: set[str] = set()
_LOCK = threading.Lock()
# query parameters whose value is a credential (matched case-insensitively): these words anywhere in the name,
# or the whole name for short ones (Azure Functions' `code`)
_SECRET_PARAM = re.compile(
    r"key|token|secret|passw|pwd|auth|sig|credential|session|^(code|pass|jwt)$", re.IGNORECASE
)


def secret_forms(value: str) -> set[str]:
    """``value``, stripped of surrounding whitespace, and both as JSON and Python escape them: a key read with a
    trailing carriage return reaches an error message or a JSON record escaped (backslash, r), which the plain
    form does not match."""
    forms = {value, value.strip()}
    for v in list(forms):
        forms |= {json.dumps(v)[1:-1], json.dumps(v, ensure_ascii=False)[1:-1], repr(v)[1:-1]}
    return {f for f in forms if len(f) >= 4}  # a 1-3 character "secret" would mask ordinary text everywhere


def add_secret(value: str | None) -> None:
    """Remember ``value`` (an API key, a URL password) so that ``redact`` masks it from now on, in every
    form it can be written in (``secret_forms``)."""
    if value:
        with _LOCK:
            _SECRETS.update(secret_forms(value))


def url_secrets(url: str | None) -> list[str]:
    """The password (and user name) and the secret-looking query values of ``url``."""
    if not url:
        return []
    parts = urlsplit(url)
    found = [v for v in (parts.password, parts.username) if v]
    found += [v for k, v in parse_qsl(parts.query, keep_blank_values=False) if _SECRET_PARAM.search(k)]
    return found


def redact(value: Any) -> Any:
    """``value`` (a string, or dicts / lists / tuples of them) with every registered secret masked."""
    if isinstance(value, str):
        with _LOCK:
            secrets = sorted(_SECRETS, key=len, reverse=True)
        for s in secrets:
            if s in value:
                value = value.replace(s, MASK)
        return value
    if isinstance(value, dict):
        return {redact(k): redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact(v) for v in value)
    return value


def public_url(url: str) -> str:
    """``url`` without user info and without secret-looking query parameters (the others are kept)."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return url
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    query = urlencode(
        [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if not _SECRET_PARAM.search(k)]
    )
    return urlunsplit((parts.scheme, host, parts.path, query, ""))


def public_config(config: dict[str, Any]) -> dict[str, Any]:
    """A config dict fit for a result file: every http(s) URL made public, registered secrets masked."""

    def clean(v):
        if isinstance(v, str) and v.startswith(("http://", "https://")):
            return public_url(v)
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return v

    return redact(clean(config))
