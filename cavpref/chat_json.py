"""Asking an OpenAI-compatible endpoint for JSON: find the JSON in a reply, and ask again when there is none.

Judges (``cavpref.eval``) and the benchmark builders' model roles (``cavpref.data_prep.builders``) both ask
``ChatClient`` for structured replies. Models wrap JSON in prose or code fences and leave trailing commas;
``parse_json_reply`` reads all of that. A reply that still does not parse is asked again with another
``seed`` (a new request, so not the cached bad reply): deterministic given the reply cache, and a resumed
run costs no call that already succeeded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def _loads_lenient(text: str) -> Any:
    text = re.sub(r",\s*([}\]])", r"\1", text.strip())  # trailing commas
    return json.loads(text)


def parse_json_reply(text: str | None, *, want: type = dict) -> Any:
    """The JSON object (``want=dict``) or list (``want=list``) in a judge reply: the whole reply, a
    fenced ```json block, or the outermost braces/brackets in surrounding prose. Raises ValueError."""
    if not text or not text.strip():
        raise ValueError("empty reply")
    candidates = [text] + _FENCE.findall(text)
    opener, closer = ("{", "}") if want is dict else ("[", "]")
    start, end = text.find(opener), text.rfind(closer)
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for c in candidates:
        try:
            value = _loads_lenient(c)
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(value, want):
            return value
    raise ValueError(f"no JSON {want.__name__} in reply {text[:120]!r}")


RETRY_SEED_STEP = 1000


@dataclass
class Reply:
    """A reply and what it was parsed into; ``error`` when the call failed or the reply stayed unusable
    after every retry."""

    value: Any = None
    text: str | None = None
    error: str | None = None
    attempts: int = 0


def ask(
    client,
    requests: Sequence[tuple],
    parse: Callable[[int, str | None], Any],
    *,
    max_tokens: int,
    retries: int = 2,
    desc: str = "ask",
) -> list[Reply]:
    """Send ``(messages, seed)`` or ``(messages, seed, cache_tag)`` requests through the shared
    ``ChatClient`` (its cache, retries and concurrency bound) and parse each reply with
    ``parse(request index, text)`` (ValueError: unusable). ``cache_tag`` makes identical requests separate
    calls with separate cache entries (``ChatClient.chat``: an MMAR rater is one independent judge request).
    Requests the endpoint cannot tell apart (the same messages and seed, whatever their tags) are sent one
    after another in their order here, as MMAR's released script sends its five same-seed raters: the k-th
    of them gets the endpoint's k-th reply to that body. Sent at once, which reply went to which request
    depended on which arrived first, so the "runs" reading of a fresh run changed from run to run.
    A reply that does not parse is asked again with the seed moved by ``RETRY_SEED_STEP`` (a new
    request, so not the cached bad reply), at most ``retries`` times; the outcome is deterministic
    given the cache. Transport failures are returned as errors (not cached, so
    a resumed run asks again)."""
    from concurrent.futures import ThreadPoolExecutor

    from tqdm.auto import tqdm

    out = [Reply() for _ in requests]
    todo = list(range(len(requests)))
    with ThreadPoolExecutor(max_workers=client.config.max_concurrency) as pool:
        for attempt in range(retries + 1):
            if not todo:
                break

            def call(i, attempt=attempt):
                messages, seed, *tag = requests[i]
                params = {"max_tokens": max_tokens}
                if seed is not None or attempt:
                    params["seed"] = (seed or 0) + RETRY_SEED_STEP * attempt
                return client.chat(messages, cache_tag=tag[0] if tag else None, **params)

            def in_turn(indices, call=call):
                return [call(i) for i in indices]

            groups: dict[str, list[int]] = {}
            for i in todo:
                groups.setdefault(_identity(requests[i]), []).append(i)
            futures = [pool.submit(in_turn, indices) for indices in groups.values()]
            bar = tqdm(futures, desc=desc, disable=len(futures) < 32, leave=False)
            results = {}
            for indices, fut in zip(groups.values(), bar):
                results.update(zip(indices, fut.result()))
            again = []
            for i in todo:
                res = results[i]
                rep = out[i]
                rep.attempts, rep.text = attempt + 1, res.text
                if not res.ok:
                    rep.error = res.error
                    continue
                try:
                    rep.value, rep.error = parse(i, res.text), None
                except ValueError as bad:
                    rep.error = f"malformed reply: {bad}"
                    again.append(i)
            todo = again
    return out


def _identity(request: tuple) -> str:
    """What the endpoint sees of a request (its messages and seed; a cache tag is never sent)."""
    messages, seed, *_ = request
    return json.dumps([messages, seed], sort_keys=True, ensure_ascii=False, default=str)
