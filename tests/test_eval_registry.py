"""The benchmark registry (issue 17): every benchmark is one registered class, looked up by name, and no
module of eval/ outside the registry compares a benchmark's name."""

import inspect
import re
from dataclasses import fields
from pathlib import Path

import pytest
from cavpref.eval import registry
from cavpref.eval.benchmarks.pipeline import BenchArgs
from cavpref.eval.pipeline import EvalArgs

EVAL = Path(__file__).resolve().parents[1] / "eval"
NAMES = ("avtrustbench", "aura", "mmar", "traceav")


def test_every_benchmark_is_registered():
    assert set(NAMES) <= set(registry.names())
    for name in NAMES:
        spec = registry.get(name)
        assert spec.name == name and spec.title and spec.prediction_format and spec.default_max_new_tokens > 0
        assert spec.args_type() in (EvalArgs, BenchArgs)
    assert registry.get("traceav").uses_judge is False
    assert [registry.get(n).default_max_new_tokens for n in ("aura", "mmar", "traceav")] == [512, 1024, 32]


def test_unknown_benchmark_names_the_registered_ones():
    with pytest.raises(ValueError, match="registered: .*aura.*mmar"):
        registry.get("nope")


def test_registering_twice_under_one_name_fails():
    class Other(registry.Benchmark):
        name = "aura"

    with pytest.raises(ValueError, match="registered twice"):
        registry.register(Other)


def test_shared_argument_groups_are_declared_once():
    from cavpref.eval.args import JudgeArguments, EvalModelArguments

    from cavpref.media.args import MediaArguments

    for group in (MediaArguments, EvalModelArguments, JudgeArguments):
        for args in (EvalArgs, BenchArgs):
            assert issubclass(args, group)
        for f in fields(group):  # no re-declaration in the subclasses' own bodies
            for args in (EvalArgs, BenchArgs):
                assert f.name not in inspect.get_annotations(args), (args.__name__, f.name)


_NAME = r"[\"'](?:avtrustbench|aura|mmar|traceav)[\"']"
_COMPARISON = re.compile(
    rf"(?:==|!=)\s*{_NAME}|{_NAME}\s*(?:==|!=)|\bin\s*[(\[{{][^)\]}}]*{_NAME}|{_NAME}\s*:"
)


def test_no_benchmark_name_is_compared_outside_the_registry():
    hits = []
    for path in sorted(EVAL.rglob("*.py")):
        if path.name == "registry.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if _COMPARISON.search(line):
                hits.append(f"{path.relative_to(EVAL)}:{n}: {line.strip()}")
    assert not hits, "benchmark names compared outside eval/registry.py:\n" + "\n".join(hits)


def test_the_check_catches_a_comparison():
    for line in ('if args.benchmark == "mmar":', 'x in ("aura", "mmar")', '{"traceav": 32}', "'aura' != b"):
        assert _COMPARISON.search(line), line
    assert not _COMPARISON.search('BENCHMARK = "mmar"')
