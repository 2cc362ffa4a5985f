"""The benchmark registry (issues 17, 45): one folder per benchmark, one ``Benchmark`` class, one arguments
class and one pipeline for all of them; no module outside a benchmark's folder compares its name, and the
fifth benchmark (MVBench) is named nowhere outside its folder."""

import inspect
import re
from dataclasses import fields
from pathlib import Path

import pytest

from cavpref.eval import registry
from cavpref.eval.args import EvalArgs

ROOT = Path(__file__).resolve().parents[2]
EVAL = ROOT / "eval"
NAMES = ("avtrustbench", "aura", "mmar", "traceav", "mvbench")


def test_every_benchmark_is_registered_from_its_folder():
    assert set(NAMES) <= set(registry.names())
    for name in NAMES:
        cls = registry.get(name)
        assert cls.name == name and cls.title and cls.prediction_format and cls.defaults["max_new_tokens"] > 0
        assert issubclass(cls, registry.Benchmark)
        assert Path(inspect.getfile(cls)) == EVAL / "benchmarks" / name / "__init__.py"
    assert registry.get("traceav").uses_judge is False
    assert [EvalArgs(benchmark=n).max_new_tokens for n in ("aura", "mmar", "traceav")] == [512, 1024, 32]


def test_one_benchmark_class_name():
    """ "Benchmark" is the registry's class and nothing else of eval/ defines a class of that name."""
    defined = [
        f"{p.relative_to(EVAL)}"
        for p in EVAL.rglob("*.py")
        if re.search(r"^class Benchmark\b", p.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert defined == ["registry.py"]


def test_unknown_benchmark_names_the_registered_ones():
    with pytest.raises(ValueError, match="registered: .*aura.*mmar"):
        registry.get("nope")


def test_registering_twice_under_one_name_fails():
    class Other(registry.Benchmark):
        name = "aura"

    with pytest.raises(ValueError, match="registered twice"):
        registry.register(Other)


def test_shared_keys_are_declared_once():
    """EvalArgs is built from the shared groups without re-declaring them, and no benchmark's Options
    re-declares a key of EvalArgs (the command line parses both into one flat set of keys)."""
    from cavpref.eval.args import EvalModelArguments, JudgeArguments
    from cavpref.media.args import MediaArguments

    for group in (MediaArguments, EvalModelArguments, JudgeArguments):
        assert issubclass(EvalArgs, group)
        for f in fields(group):
            assert f.name not in inspect.get_annotations(EvalArgs), f.name
    shared = {f.name for f in fields(EvalArgs)}
    for name in NAMES:
        own = {f.name for f in fields(registry.get(name).Options)}
        assert not own & shared, (name, own & shared)


_NAME = r"[\"'](?:avtrustbench|aura|mmar|traceav|mvbench)[\"']"
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


def test_the_fifth_benchmark_lives_in_one_folder():
    """Adding MVBench touched one new folder: no code, recipe or packaging file outside
    eval/benchmarks/mvbench/ names it (its tests and docs pages may)."""
    folder = EVAL / "benchmarks" / "mvbench"
    assert (folder / "__init__.py").is_file()
    hits = []
    for top in ("cavpref", "eval", "data_prep", "cavpref_lab", "scripts", "recipes"):
        for path in sorted((ROOT / top).rglob("*")):
            if (
                not path.is_file()
                or folder in path.parents
                or path.suffix not in (".py", ".yaml", ".yml", ".json")
            ):
                continue
            if re.search("mvbench", path.read_text(encoding="utf-8", errors="replace"), re.IGNORECASE):
                hits.append(str(path.relative_to(ROOT)))
    for name in ("pyproject.toml", "setup.py"):
        if "mvbench" in (ROOT / name).read_text().lower():
            hits.append(name)
    assert not hits, hits
