"""Results live beside their experiment (issue 52): each lab experiment's result page is the README.md of its
folder in ``cavpref_lab/``, with the plots it shows beside it; docs/results.md is only the index of those pages,
and docs/ keeps the manuals (no result plot, no result page of its own)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "cavpref_lab"
INDEX = ROOT / "docs" / "results.md"
EXPERIMENTS = ("ladder", "science", "bench")  # the folders whose runs publish tables


def _links(page: Path) -> set[Path]:
    return {
        (page.parent / target.partition("#")[0]).resolve()
        for target in re.findall(r"\]\(([^)\s#]+)(?:#[^)\s]*)?\)", page.read_text())
        if not target.startswith(("http://", "https://"))
    }


def test_each_experiment_has_its_result_page_and_the_index_links_every_one():
    pages = {name: LAB / name / "README.md" for name in EXPERIMENTS}
    missing = [str(p.relative_to(ROOT)) for p in pages.values() if not p.exists()]
    assert not missing, f"no result page beside the experiment: {missing}"
    linked = _links(INDEX)
    assert all(p.resolve() in linked for p in pages.values()), "docs/results.md must link every result page"
    # an index, not a result page: a heading per experiment, no table of its own
    text = INDEX.read_text()
    assert len(text.splitlines()) <= 80 and not re.search(r"^\|.*\|$", text, re.MULTILINE)


def test_every_plot_sits_beside_the_page_that_shows_it():
    """A result plot is shown (or linked) by a page in its own folder, and no PNG is left orphaned."""
    shown: dict[Path, Path] = {}
    for page in [*sorted(LAB.rglob("README.md")), *sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]:
        for target in re.findall(r"\]\(([^)\s]+\.png)\)", page.read_text()):
            shown[(page.parent / target).resolve()] = page
    pngs = [*LAB.rglob("*.png"), *(ROOT / "docs").rglob("*.png")]
    orphans = [str(p.relative_to(ROOT)) for p in pngs if p.resolve() not in shown]
    assert not orphans, f"plots no page shows: {orphans}"
    apart = [
        f"{png.relative_to(ROOT)} shown by {page.relative_to(ROOT)}"
        for png, page in shown.items()
        if png.parent != page.parent.resolve()
    ]
    assert not apart, "a plot lives in another folder than its page:\n" + "\n".join(apart)
    assert any(p.parent == LAB / "ladder" for p in pngs), "the ladder's plots live beside its code"


def test_the_docs_quote_the_wall_time_the_quickstart_prints():
    """The run prints MEASURED_WALL before its first stage; the README and the presets table must quote the
    same measurement, so a re-measured default cannot leave one of them behind."""
    from cavpref.apps.quickstart.config import MEASURED_WALL

    quickstart = (ROOT / "docs" / "quickstart.md").read_text()
    assert f"**{MEASURED_WALL['default']}**" in (ROOT / "README.md").read_text()
    for preset in ("default", "perceiving"):
        row = next(line for line in quickstart.splitlines() if line.startswith(f"| `{preset}` |"))
        assert MEASURED_WALL[preset] in row.rsplit("|", 2)[-2], (preset, MEASURED_WALL[preset])
