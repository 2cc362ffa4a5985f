"""Argument groups every ``cavpref eval`` command shares, declared once.

``EvalModelArguments`` (what answers: a checkpoint or an OpenAI-compatible endpoint) and ``JudgeArguments`` (the
LLM judge and its cache) are mixed into ``eval.pipeline.EvalArgs`` (AVTrustBench) and
``eval.benchmarks.pipeline.BenchArgs`` (AURA / MMAR / TraceAV-Bench) next to
``cavpref.media.args.MediaArguments``, so a key means the same thing in every command and config file.
Fields stay flat (``args.judge_model``): the YAML keys and ``--flags`` are the field names.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class EvalModelArguments:
    """The model that answers: a local checkpoint, or an OpenAI-compatible server."""

    model: str = field(
        default="",
        metadata={
            "help": "checkpoint folder / hub id, or the base URL (http[s]://…/v1) "
            "of an OpenAI-compatible server"
        },
    )
    model_io: str | None = field(
        default=None, metadata={"help": "registered model I/O wrapper (default: from config.json)"}
    )
    dtype: str = field(
        default="auto", metadata={"help": "torch dtype of a local checkpoint (auto | bfloat16 | …)"}
    )
    audio_max_seconds: float | None = field(
        default=30.0,
        metadata={
            "help": "local models: audio cut at / padded to this many seconds (AVModelArguments.audio_max_seconds; "
            "evaluate with the value the model was trained with)"
        },
    )
    endpoint_model: str | None = field(default=None, metadata={"help": "served model name (endpoint models)"})
    endpoint_api_key_env: str = field(
        default="CAVPREF_ENDPOINT_API_KEY",
        metadata={
            "help": "environment variable holding the endpoint's API key (the key itself is never stored)"
        },
    )
    endpoint_concurrency: int = field(default=8, metadata={"help": "parallel requests to the endpoint"})
    endpoint_timeout_s: float = field(
        default=120.0, metadata={"help": "seconds before an endpoint request is abandoned (then retried)"}
    )
    endpoint_max_retries: int = field(
        default=2, metadata={"help": "retries on timeouts / 429 / 5xx (with backoff)"}
    )
    max_reply_bytes: int = field(
        default=1 << 20, metadata={"help": "a longer endpoint / judge reply is an error, never stored"}
    )
    media_format: str = field(default="mp4", metadata={"help": "endpoint media: mp4 | frames"})


@dataclass
class JudgeArguments:
    """The LLM judge (OpenAI-compatible) and its SQLite reply cache."""

    judge_model: str | None = field(default=None, metadata={"help": "LLM judge (or CAVPREF_JUDGE_MODEL)"})
    judge_base_url: str | None = field(
        default=None, metadata={"help": "judge server (or CAVPREF_JUDGE_BASE_URL)"}
    )
    judge_api_key_env: str = field(
        default="CAVPREF_JUDGE_API_KEY",
        metadata={
            "help": "environment variable holding the judge's API key (the key itself is never stored)"
        },
    )
    judge_concurrency: int = field(default=8, metadata={"help": "parallel judge requests"})
    judge_max_retries: int = field(
        default=4, metadata={"help": "retries on timeouts / 429 / 5xx (with backoff)"}
    )
    judge_timeout_s: float = field(
        default=60.0, metadata={"help": "seconds before a judge request is abandoned"}
    )
    judge_cache: str | None = field(
        default=None, metadata={"help": "SQLite cache (default: <output>/judge_cache.sqlite)"}
    )
    no_judge: bool = field(default=False, metadata={"help": "no judge, even if one is configured"})
