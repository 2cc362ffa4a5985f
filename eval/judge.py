"""The evaluator's name for the project's one OpenAI-compatible chat client.

The client is core (data prep uses it too): it lives in ``cavpref.chat_client``; these names stay
importable from here so evaluator code and recipes keep working.
"""

from cavpref.chat_client import (
    RETRY_STATUS,
    ChatCache,
    ChatClient,
    ChatConfig,
    ChatResult,
    public_url,
    request_hash,
)

__all__ = [
    "RETRY_STATUS",
    "ChatCache",
    "ChatClient",
    "ChatConfig",
    "ChatResult",
    "public_url",
    "request_hash",
]
