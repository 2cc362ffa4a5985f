"""The layering of the package, read from the source (``ast``), not from a running interpreter.

* the **core** (``cavpref`` minus ``cavpref.apps``, ``cavpref.data_prep``, ``cavpref.eval``) imports none of
  the stages or apps — a trainer user gets no benchmark code, and the core can be reviewed on its own;
* ``cavpref.data_prep`` imports the core only; ``cavpref.eval`` the core and ``cavpref.data_prep`` (it
  evaluates what prep built); only ``cavpref.apps`` (command line, quickstart) may import everything;
* ``cavpref_lab`` (the experiments) may import any layer of the product, but only its public names (no
  ``_private`` name or module; the quickstart through its package, ``cavpref.apps.quickstart``), and no
  module of the product imports the lab — the product installs and runs without it;
* nothing imports the folders by their bare names (``data_prep``, ``eval``): they are installed as
  sub-packages of ``cavpref``;
* no import cycle between modules, counting imports inside functions too (an import moved into a function
  to dodge a cycle is still a cycle).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {
    "cavpref": ROOT / "cavpref",
    "cavpref.data_prep": ROOT / "data_prep",
    "cavpref.eval": ROOT / "eval",
    "cavpref_lab": ROOT / "cavpref_lab",
}


def modules() -> dict[str, Path]:
    out = {}
    for package, folder in FOLDERS.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


def imports(name: str, path: Path, known: set[str]) -> list[tuple[str, int]]:
    """(imported module, line) for every import statement of one module, resolved to a known module."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # ``from pkg import sub`` imports the sub-module when there is one, else a name of ``pkg``.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        found += [(t, node.lineno) for t in targets]
    return found


def layer(module: str) -> str:
    for prefix in ("cavpref_lab", "cavpref.apps", "cavpref.data_prep", "cavpref.eval"):
        if module == prefix or module.startswith(prefix + "."):
            return prefix
    return "core"


ALLOWED = {
    "core": {"core"},
    "cavpref.data_prep": {"core", "cavpref.data_prep"},
    "cavpref.eval": {"core", "cavpref.data_prep", "cavpref.eval"},
    "cavpref.apps": {"core", "cavpref.data_prep", "cavpref.eval", "cavpref.apps"},
    "cavpref_lab": {"core", "cavpref.data_prep", "cavpref.eval", "cavpref.apps", "cavpref_lab"},
}


@pytest.fixture(scope="module")
def graph() -> dict[str, list[tuple[str, int]]]:
    mods = modules()
    return {name: imports(name, path, set(mods)) for name, path in mods.items()}


def test_the_stage_folders_are_installed_as_subpackages():
    text = (ROOT / "setup.py").read_text()
    assert '"cavpref.data_prep": "data_prep"' in text and '"cavpref.eval": "eval"' in text


def test_no_module_imports_a_stage_by_its_bare_folder_name(graph):
    bare = [
        f"{m}:{line} imports {t}"
        for m, edges in graph.items()
        for t, line in edges
        if t.split(".")[0] in ("data_prep", "eval")
    ]
    assert not bare, "\n".join(bare)


def test_each_layer_imports_only_the_layers_below_it(graph):
    wrong = [
        f"{m}:{line} ({layer(m)}) imports {t} ({layer(t)})"
        for m, edges in graph.items()
        for t, line in edges
        if t.startswith("cavpref") and layer(t) not in ALLOWED[layer(m)]
    ]
    assert not wrong, "\n".join(wrong)


def test_the_product_never_imports_the_lab(graph):
    wrong = [
        f"{m}:{line} imports {t}"
        for m, edges in graph.items()
        for t, line in edges
        if layer(m) != "cavpref_lab" and t.split(".")[0] == "cavpref_lab"
    ]
    assert not wrong, "\n".join(wrong)


def test_the_lab_imports_only_public_names_of_the_product():
    """Every ``from cavpref... import name`` of ``cavpref_lab``: no ``_name``, no ``_module`` on the way,
    and the quickstart's names from its package (its modules are its own business)."""
    wrong = []
    for path in sorted((ROOT / "cavpref_lab").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "cavpref":
                names = [*node.module.split("."), *(a.name for a in node.names)]
                quickstart_inside = node.module.startswith("cavpref.apps.quickstart.")
                if quickstart_inside or any(n.startswith("_") for n in names):
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno} from {node.module} import ...")
            elif isinstance(node, ast.Import):
                wrong += [
                    f"{path.relative_to(ROOT)}:{node.lineno} import {a.name}"
                    for a in node.names
                    if a.name.split(".")[0] == "cavpref" and any(p.startswith("_") for p in a.name.split("."))
                ]
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles(graph):
    """Tarjan's strongly connected components over module -> module edges (package ``__init__`` files
    included); any component of two or more modules, or a module importing itself, is a cycle."""
    edges = {m: sorted({t for t, _ in e if t in graph and t != m}) for m, e in graph.items()}
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)
