"""No declared extra is unused (issue 45): every package of every optional extra (``[project.optional-dependencies]``
but ``dev``) is imported by the code — an import statement, or a module name handed to ``importlib`` (the
scorers' optional backends) — or used by a named tool that imports it itself. The ``[vllm]`` extra was
declared and never imported; vLLM is used as an external ``vllm serve`` endpoint instead (docs/evaluation.md)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parents[2]
# distribution -> import name, where they differ
MODULE = {
    "open_clip_torch": "open_clip",
    "laion-clap": "laion_clap",
    "sentence-transformers": "sentence_transformers",
}
# packages imported by another library on the project's behalf: (file that proves the use, text in it)
INDIRECT = {
    "deepspeed": ("recipes/accelerate/deepspeed_zero2.yaml", "distributed_type: DEEPSPEED"),  # accelerate
    "timm": ("data_prep/scoring/encoders_pe.py", "AutoModel"),  # transformers' PE video tower
}
LOADERS = ("_optional", "import_module", "find_spec")


def imported_modules() -> set[str]:
    found = set()
    for folder in ("cavpref", "data_prep", "eval", "cavpref_lab", "scripts"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    found |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    found.add(node.module.split(".")[0])
                elif (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "attr", getattr(node.func, "id", "")) in LOADERS
                ):
                    found |= {a.value.split(".")[0] for a in node.args[:1] if isinstance(a, ast.Constant)}
    return found


def test_every_declared_extra_is_used():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    imported = imported_modules()
    unused = []
    for extra, requirements in extras.items():
        if extra == "dev":
            continue
        for req in requirements:
            dist = re.split(r"[<>=!~;\[ ]", req)[0]
            module = MODULE.get(dist, dist.replace("-", "_"))
            if module in imported:
                continue
            proof = INDIRECT.get(module)
            if proof and proof[1] in (ROOT / proof[0]).read_text():
                continue
            unused.append(f"[{extra}] {dist}")
    assert not unused, f"declared extras nothing uses: {unused}"
    assert "vllm" not in extras
