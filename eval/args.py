"""``EvalArgs``: the one arguments class of every ``cavpref eval`` command, for every benchmark.

It is made of groups declared once — ``EvalModelArguments`` (what answers: a checkpoint or an
OpenAI-compatible endpoint), ``JudgeArguments`` (the LLM judge and its cache),
``cavpref.media.args.MediaArguments`` (frames) — and the run keys every benchmark shares (data, output,
tasks, limit, answer mode, protocol, stream ablations). What only one benchmark has (AVTrustBench's
setting and CircularEval, MMAR's raters, TraceAV-Bench's long-video sampling) is that benchmark's
``Options`` dataclass, in its folder (``eval/benchmarks/<name>/``); the command line parses both into one
flat set of keys (``cavpref eval <name> --help`` lists them). Fields stay flat (``args.judge_model``): the
YAML keys and ``--flags`` are the field names.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from cavpref.eval.option_score import OPTION_SCORES, check_option_score
from cavpref.media.args import MediaArguments
from cavpref.output_dir import OutputArguments

MODES = ("generate", "likelihood")
PROTOCOLS = ("paper", "official")
STREAMS = ("video", "audio")


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


@dataclass
class HTMLReportArguments:
    """The HTML report of a run (``report.html``, ``eval.html_report``): its media and its size."""

    no_media: bool = field(
        default=False, metadata={"help": "HTML report: no thumbnails or audio clips (the page alone)"}
    )
    media_budget_mb: float = field(
        default=50.0,
        metadata={"help": "HTML report: MB of thumbnails and audio clips written next to the page at most"},
    )
    thumbnail_frames: int = field(
        default=4, metadata={"help": "HTML report: frames the model saw shown per item (a strip)"}
    )
    thumbnail_height: int = field(default=72, metadata={"help": "HTML report: pixel height of the frames"})
    audio_clip_seconds: float = field(
        default=10.0, metadata={"help": "HTML report: seconds of the audio the model heard, per item"}
    )
    html_max_items: int = field(
        default=5000,
        metadata={
            "help": "HTML report: items on the page at most (beyond: the first of each task and setting, "
            "with their clean twins; the page says so)"
        },
    )

    def __post_init__(self):
        if self.media_budget_mb < 0 or self.thumbnail_frames < 1 or self.thumbnail_height < 8:
            raise ValueError(
                "--media_budget_mb must be >= 0, --thumbnail_frames >= 1 and --thumbnail_height >= 8"
            )
        if self.audio_clip_seconds < 0 or self.html_max_items < 1:
            raise ValueError("--audio_clip_seconds must be >= 0 and --html_max_items >= 1")


@dataclass
class EvalArgs(EvalModelArguments, MediaArguments, JudgeArguments, HTMLReportArguments, OutputArguments):
    """Every field is a ``--flag`` and a YAML key of ``cavpref eval <benchmark> | score | prompts``; the
    benchmark's own keys come from its ``Options`` (``cavpref.eval.registry``)."""

    benchmark: str = field(
        default="avtrustbench",
        metadata={"help": "a registered benchmark (`cavpref eval <name>` sets it; `eval score` reads it)"},
    )
    data: str = field(
        default="",
        metadata={"help": "the benchmark's data (released file or folder; AVTrustBench: prep output)"},
    )
    output: str = field(default="", metadata={"help": "run folder (records, results.json, report.md, plots)"})
    media_root: str | None = field(
        default=None, metadata={"help": "media folder (default: the benchmark's, e.g. --data's folder)"}
    )
    tasks: list[str] = field(
        default_factory=list,
        metadata={"help": "the benchmark's sub-tasks to run (default: its default set; see its docs)"},
    )
    limit: int | None = field(
        default=None,
        metadata={"help": "first N items (by id) of each task (AVTrustBench: and setting); 0 or unset = all"},
    )
    label: str | None = field(default=None, metadata={"help": "name of this run in reports and `compare`"})
    mode: str = field(
        default="generate",
        metadata={"help": "generate (free-form answer, parsed) | likelihood (option scoring, where offered)"},
    )
    option_score: str = field(
        default="per_token",
        metadata={
            "help": "likelihood mode: how an option's log-likelihood is read for the headline — per_token (the "
            "summed log-prob over its token count; default: the sum makes a model that never abstains 'abstain' "
            "on 90-100 % of COT-Stitch / CAT, whose options are long, cavpref_lab/ladder/README.md) | sum | letter (the "
            "answer letter alone); all three are recorded and reported (docs/evaluation.md)",
            "choices": list(OPTION_SCORES),
        },
    )
    protocol: str = field(
        default="paper",
        metadata={
            "help": "paper: the papers' rules; official: the released scoring scripts' per-item decisions and "
            "totals, where the benchmark has one (docs/reasoning_benchmarks.md)"
        },
    )
    batch_size: int | None = field(
        default=None, metadata={"help": "items per model batch (default: the benchmark's)"}
    )
    chunk_size: int | None = field(
        default=None,
        metadata={"help": "items decoded and scored per chunk, records flushed (default: the benchmark's)"},
    )
    max_new_tokens: int | None = field(
        default=None, metadata={"help": "generation length (default: the benchmark's)"}
    )
    sample_rate: int = field(default=16000, metadata={"help": "audio sample rate fed to the model"})
    missing_stream: str = field(
        default="allow",
        metadata={
            "help": "a stream an item keeps but its file lacks (no audio track): allow (evaluate without it, "
            "counted per task in results.json) | error"
        },
    )
    drop_stream: str | None = field(
        default=None,
        metadata={"help": "ablation: remove the video or the audio from every item (video | audio)"},
    )
    text_only: bool = field(
        default=False,
        metadata={"help": "ablation ('blindfold'): no media at all, only the question and options"},
    )
    no_html: bool = field(
        default=False, metadata={"help": "do not write report.html (the per-item HTML report)"}
    )

    def __post_init__(self):
        MediaArguments.__post_init__(self)
        HTMLReportArguments.__post_init__(self)
        from cavpref.eval import registry

        bench = registry.get(self.benchmark)
        for key, value in bench.defaults.items():
            if getattr(self, key) is None:
                setattr(self, key, value)
        if self.mode not in bench.modes:
            raise ValueError(f"--mode: {self.benchmark} offers {list(bench.modes)}, got {self.mode!r}")
        check_option_score(self.option_score)
        if self.protocol not in bench.protocols:
            raise ValueError(
                f"--protocol: {self.benchmark} has {list(bench.protocols)} (of {list(PROTOCOLS)}), "
                f"got {self.protocol!r}"
            )
        if self.drop_stream not in (None, *STREAMS):
            raise ValueError(f"--drop_stream must be video or audio, got {self.drop_stream!r}")
        if self.text_only and self.drop_stream:
            raise ValueError("--text_only already drops both streams; leave --drop_stream unset")
        if self.missing_stream not in ("allow", "error"):
            raise ValueError(f"--missing_stream must be allow or error, got {self.missing_stream!r}")

    def public(self) -> dict[str, Any]:
        from cavpref.redact import public_config

        # env-variable *names* only, never keys; URLs lose their user info and secret query parameters
        return public_config(asdict(self))
