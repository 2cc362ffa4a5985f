"""LLM-written COT negatives (paper App. A.2: "generated using LLM (e.g., GPT-4) where we ask it to swap
the ordering of acoustic events, replace the preposition, or swap noun-verb associations").

Off by default (templates write the same kinds of negatives offline). When on, requests go through the
project's one OpenAI-compatible client, ``cavpref.chat_client.ChatClient`` (retries, concurrency, SQLite reply
cache, key only in the request header). Endpoint, model and key come from :class:`LLMConfig`, else from
OPENAI_BASE_URL / OPENAI_MODEL / OPENAI_API_KEY. A reply that is not a usable JSON list falls back to
the template negatives and is marked in the item's ``meta["negatives"]``.
"""

from __future__ import annotations

import json
import random
import re

from cavpref.chat_client import ChatClient, ChatConfig
from cavpref.data_prep.tasks.common import LLMConfig, norm, shuffled, unique_by_norm
from cavpref.data_prep.tasks.context import Context

SYSTEM = "You write wrong answer options for a multiple-choice audio-visual benchmark."
PROMPT = (
    'Two sound events happen one after the other in a video: first "{a}", then "{b}". The correct '
    'description is: "{right}". Write {k} wrong descriptions that reuse the same words but change the '
    "composition: the first one must swap the order of the events; the others may replace the "
    "preposition, say both happen at the same time, or swap noun-verb associations. Reply with a JSON "
    "list of {k} strings and nothing else."
)


def messages(a: str, b: str, right: str, k: int) -> list[dict]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": PROMPT.format(a=a, b=b, right=right, k=k)},
    ]


def client(ctx: Context):
    """One ChatClient per context (per worker process)."""
    if "llm_client" not in ctx.memo:
        cfg = ctx.options.llm or LLMConfig()
        ctx.memo["llm_client"] = ChatClient(
            ChatConfig(
                base_url=cfg.base_url or None,
                model=cfg.model or None,
                api_key_env=cfg.api_key_env,
                env_prefix="OPENAI",
                timeout_s=cfg.timeout,
                max_retries=cfg.max_retries,
                give_up_when_down=True,  # an endpoint that is down fails the remaining records at once
                cache_path=cfg.cache_path,
                max_tokens=256,
                max_concurrency=cfg.max_concurrency,
            )
        )
    return ctx.memo["llm_client"]


def parse_negatives(text: str | None, right: str, k: int) -> list[str] | None:
    """The first ``k`` distinct negatives of a reply (a JSON list, code fences allowed), or None."""
    if not text:
        return None
    text = re.sub(r"^```(?:json)?\s*|\s*```$", "", text.strip())
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        return None
    negs = [v.strip() for v in unique_by_norm(value) if norm(v) != norm(right)]
    return negs[:k] if len(negs) >= k else None


def failure_kind(error: str) -> str:
    """A countable class of an endpoint error: 'HTTP 401', 'timeout', 'connection error', ..."""
    found = re.search(r"HTTP \d+|timeout|connection error|malformed reply", error or "")
    return found.group(0) if found else "error"


def llm_order_options(
    a: str, b: str, right: str, ctx: Context, rng: random.Random
) -> tuple[list[str], int, int] | str:
    """Like ``cot_stitch.order_options`` with LLM-written negatives of ``right`` (the "a, then b" option,
    ``cot_stitch.right_option``; the first negative = the swapped order), or why
    not: "llm reply unusable" / "llm endpoint error (HTTP 401)" (then the template negatives are used and
    the fallback counted), or a ``TaskError`` for an endpoint error under ``on_failure: error``."""
    k = ctx.options.num_options - 1
    reply = client(ctx).chat(messages(a, b, right, k))
    if not reply.ok:
        if (ctx.options.llm or LLMConfig()).on_failure == "error":
            from cavpref.data_prep.tasks.common import TaskError

            raise TaskError(
                f"COT-Stitch: LLM negatives for events {a!r} / {b!r}: {reply.error} "
                "(llm_on_failure: template falls back to the template negatives, counted)"
            )
        return f"llm endpoint error ({failure_kind(reply.error)})"
    negs = parse_negatives(reply.text, right, k)
    if negs is None:
        return "llm reply unusable"
    opts, (i_right, i_wrong) = shuffled([right, *negs], rng, 0, 1)
    return opts, i_right, i_wrong
