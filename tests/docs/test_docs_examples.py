"""Every fenced example in README.md, docs/*.md and the result pages beside the experiments
(cavpref_lab/**/README.md) runs, as a user following the page would run it (issue 37).

The convention (what runs, where, fast or slow, and the ``<!-- doc-test: ... -->`` marker for blocks this CPU
machine cannot run as written) is in docs/index.md, "Examples that run". Each page's blocks run in order in one
fresh folder; the default suite runs the fast blocks, ``-m slow`` every block.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the result pages live beside their experiment (cavpref_lab/<experiment>/README.md, issue 52); docs/ the manuals
RESULT_PAGES = sorted((ROOT / "cavpref_lab").rglob("README.md"))
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *RESULT_PAGES]
RUN, NOT_RUN = ("bash", "python"), ("text",)
FENCE = re.compile(r"^```(\S*)\s*$")
MARK = re.compile(r"^<!--\s*doc-test:(.*?)-->\s*$")
LINKED = ("recipes", "scripts")  # repository folders a page's commands name as from a checkout


@dataclass
class Block:
    page: Path
    line: int
    lang: str
    code: str
    slow: bool = False
    setup: bool = False
    why: str = ""
    replace: list[tuple[str, str]] = field(default_factory=list)

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def runnable(self) -> str:
        code = self.code
        for old, new in self.replace:
            code = code.replace(old, new)
        return code


def parse_mark(text: str) -> dict:
    """``slow setup why="..." replace="OLD=>NEW" ...`` -> {"slow": bool, "setup": bool, "why": str, "replace": [...]}"""
    out: dict = {"slow": False, "setup": False, "why": "", "replace": []}
    for token in shlex.split(text):
        key, _, value = token.partition("=")
        if key in ("slow", "setup") and not value:
            out[key] = True
        elif key == "why":
            out["why"] = value
        elif key == "replace" and "=>" in value:
            out["replace"].append(tuple(value.split("=>", 1)))
        else:
            raise ValueError(f"unknown doc-test directive {token!r}")
    return out


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` with their ``doc-test`` mark (the nearest one above the fence, with only
    blank lines and other HTML comments between)."""
    lines = page.read_text().split("\n")
    found, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m or lines[i].startswith("````"):
            i += 1
            continue
        start, lang = i, m.group(1)
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        mark, k = {}, start - 1
        while k >= 0 and (not lines[k].strip() or lines[k].lstrip().startswith("<!--")):
            hit = MARK.match(lines[k].strip())
            if hit:
                mark = parse_mark(hit.group(1))
                break
            k -= 1
        found.append(Block(page, start + 1, lang, "\n".join(lines[start + 1 : j]) + "\n", **mark))
        i = j + 1
    return found


ALL = [b for page in PAGES for b in blocks(page)]


def test_every_block_says_whether_it_runs_and_every_stand_in_says_why():
    problems = []
    for b in ALL:
        if b.lang not in RUN + NOT_RUN:
            problems.append(f"{b.where()}: ```{b.lang} -- use one of {RUN + NOT_RUN} (docs/index.md)")
        if b.replace and not b.why:
            problems.append(f"{b.where()}: replace without why=")
        problems += [
            f"{b.where()}: replace {old!r} not in the block" for old, _ in b.replace if old not in b.code
        ]
    assert not problems, "\n".join(problems)
    assert sum(b.lang in RUN for b in ALL) >= 20  # the pages have examples, and they are found


def _env(workdir: Path) -> dict:
    env = dict(os.environ)
    env.update(
        OMP_NUM_THREADS="1",
        HF_HUB_OFFLINE="1",
        HF_DATASETS_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        MPLBACKEND="Agg",
        CAVPREF_REPO=str(ROOT),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
    )
    return env


def _folder(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        if not (path / name).exists():
            (path / name).symlink_to(ROOT / name)
    return path


def _run(block: Block, workdir: Path) -> None:
    code = block.runnable()
    if block.lang == "python":  # a file, as a user's script is (tools that read the source need one)
        script = workdir / f"doc_example_{block.line}.py"
        script.write_text(code)
        argv = [sys.executable, script.name]
    else:
        argv = ["bash", "-euo", "pipefail", "-c", code]
    done = subprocess.run(
        argv,
        check=False,
        cwd=workdir,
        env=_env(workdir),
        capture_output=True,
        text=True,
        timeout=1800 if block.slow else 600,
    )
    assert done.returncode == 0, (
        f"{block.where()} failed (exit {done.returncode}):\n{code}\n--- output ---\n"
        f"{(done.stdout + done.stderr)[-4000:]}"
    )


def _setup(block: Block, workdir: Path, cache: Path) -> None:
    """A ``setup`` block runs once per session (keyed by its text) and its outputs are copied in."""
    built = cache / hashlib.sha256(block.runnable().encode()).hexdigest()[:16]
    if not (built / ".done").exists():
        shutil.rmtree(built, ignore_errors=True)
        _run(block, _folder(built))
        (built / ".done").touch()
    for item in built.iterdir():
        if item.name in (*LINKED, ".done"):
            continue
        target = workdir / item.name
        if item.is_dir():
            shutil.copytree(item, target, dirs_exist_ok=True, symlinks=True)
        else:
            shutil.copy2(item, target)


def _run_page(page: Path, workdir: Path, cache: Path, *, slow: bool) -> int:
    ran = 0
    for block in blocks(page):
        if block.lang not in RUN or (block.slow and not slow):
            continue
        if block.setup:
            _setup(block, workdir, cache)
        else:
            _run(block, workdir)
        ran += 1
    return ran


def _pages(slow: bool) -> list[Path]:
    return [p for p in PAGES if any(b.lang in RUN and (slow or not b.slow) for b in blocks(p))]


@pytest.fixture(scope="session")
def setup_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("doc_setup")


@pytest.mark.parametrize("page", _pages(slow=False), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_fast_examples_of_each_page_run(page, tmp_path, setup_cache):
    assert _run_page(page, _folder(tmp_path / "page"), setup_cache, slow=False) > 0


@pytest.mark.slow
@pytest.mark.timeout(3600)  # a page of quickstart-sized runs on 2 busy cores
@pytest.mark.parametrize("page", _pages(slow=True), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_of_each_page_runs(page, tmp_path, setup_cache):
    assert _run_page(page, _folder(tmp_path / "page"), setup_cache, slow=True) > 0


def test_a_block_that_fails_fails_its_page(tmp_path, setup_cache):
    """The harness itself: a failing block is reported with its page and line, a mark is honoured."""
    page = tmp_path / "page.md"
    page.write_text(
        '<!-- doc-test: why="x" replace="exit 3=>true" -->\n```bash\nexit 3\n```\n\n```python\nraise SystemExit(4)\n```\n'
    )
    first, second = blocks(page)
    assert first.replace == [("exit 3", "true")] and not second.replace
    _run(
        Block(ROOT / "README.md", first.line, "bash", first.code, replace=first.replace),
        _folder(tmp_path / "w"),
    )
    with pytest.raises(AssertionError, match=r"README.md:6 failed \(exit 4\)"):
        _run(Block(ROOT / "README.md", 6, "python", second.code), _folder(tmp_path / "w"))
    with pytest.raises(ValueError, match="unknown doc-test directive"):
        parse_mark("fast")


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def test_every_link_and_docs_path_resolves():
    """A moved page leaves no dead link: every relative markdown link and image (file and #anchor) in README.md,
    docs/ and the result pages, and every ``docs/*.md`` or ``cavpref_lab/**/README.md`` path named in the docs,
    the code or the recipes, exists."""
    dead = []
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *RESULT_PAGES]
    anchors = {
        p.resolve(): {_slug(h) for h in re.findall(r"^#+ (.+)$", p.read_text(), re.MULTILINE)} for p in pages
    }
    for page in pages:
        for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
            if target.startswith(("http://", "https://", "mailto:")):
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page.resolve()
            if not file.exists():
                dead.append(f"{page.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors.get(file, set()):
                dead.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    sources = [
        *pages,
        *ROOT.glob("cavpref/**/*.py"),
        *ROOT.glob("data_prep/**/*.py"),
        *ROOT.glob("eval/**/*.py"),
        *ROOT.glob("cavpref_lab/**/*.py"),
    ]
    sources += [*ROOT.glob("scripts/*.py"), *ROOT.glob("scripts/*.sh"), *ROOT.glob("recipes/**/*.yaml")]
    for src in sources:
        for name in set(re.findall(r"\b(?:docs/[\w/]+\.md|cavpref_lab/[\w/]*README\.md)\b", src.read_text())):
            if not (ROOT / name).exists():
                dead.append(f"{src.relative_to(ROOT)}: {name}")
    assert not dead, "\n".join(dead)
