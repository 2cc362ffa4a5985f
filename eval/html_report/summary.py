"""report.md in the HTML report, each number linked to the items behind it.

report.md is rendered with markdown-it-py (raw HTML off, so nothing in it becomes markup). Before that,
every numeric table cell becomes a link to the item list filtered to the items the number is computed
over (``#items?setting=instruction&task=MCIT``). The filter of a cell is read from the report's own
labels, matched against the facet values the rows carry (``rows.FACETS``), never from a hand-kept list:

- the headings above the table (``## Accuracy per task — instruction setting`` → setting=instruction;
  ``### Per category — music_avqa, …`` → source=music_avqa),
- the row's label cells (``MCIT`` → task=MCIT) and the cell's column header (``Cn`` → category, via the
  benchmark's ``report_links``),
- the benchmark's ``report_links`` for labels that name a set of items in its own words (AVTrustBench:
  ``Pairs`` → the perturbed items whose clean twin was evaluated; ``False abstention %`` → CLEAN).

A number whose row and column name no set of items (``rows read``, ``passes run``) stays plain text; an
aggregate row or column (``**all**``, ``overall``) links to everything its headings (and row) select.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote

from cavpref.eval.html_report.rows import FACETS

# a number, optionally with a difference "(+3.1)", a 95 % interval "[22.0, 41.5]" or a count "/ 40"
NUMBER = re.compile(
    r"[+\-−]?\d[\d.,]*\s*%?(\s*\([+\-−]?\d[\d.,]*\))?(\s*\[[\d.]+, [\d.]+\])?(\s*(/|of)\s*[+\-−]?\d[\d.,]*\s*%?)?"
)
AGGREGATE = {"all", "overall", "items", "avg", "total", "mean", "all items"}
# Facets a heading may name: what a table is about, never an outcome.
CONTEXT = ("benchmark", "setting", "source", "task", "dimension", "category")


def label(cell: str) -> str:
    """A table label as the report prints it, without emphasis, code marks and a parenthetical tail."""
    text = re.sub(r"[*`]", "", cell).strip()
    return re.sub(r"\s*\(.*\)$", "", text).strip()


def facet_values(rows: Iterable[dict]) -> dict[str, set[str]]:
    values: dict[str, set[str]] = {f: set() for f in FACETS}
    for row in rows:
        for facet, value in row["facets"].items():
            values.setdefault(facet, set()).add(value)
    return values


def lookup(text: str, values: Mapping[str, set[str]], links: Mapping[str, dict]) -> dict[str, str] | None:
    """The filter a label names: a benchmark's own label, or a facet value; None when it names none."""
    name = label(text)
    if name in links:
        return dict(links[name])
    found = {f: name for f, vs in values.items() if name in vs}
    if len(found) == 1:
        return found
    return None


def heading_filter(headings: Iterable[str], values: Mapping[str, set[str]]) -> dict[str, str]:
    """Facet values named as whole words in the headings above a table (``instruction setting``)."""
    out: dict[str, str] = {}
    for text in headings:
        for facet in CONTEXT:
            for value in sorted(values.get(facet, ()), key=len, reverse=True):
                if re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", text):
                    out[facet] = value
                    break
    return out


def href(filters: Mapping[str, str]) -> str:
    return "#items?" + "&".join(f"{quote(k)}={quote(v)}" for k, v in sorted(filters.items()))


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def link_numbers(
    markdown: str, rows: list[dict], links: Mapping[str, dict] | None = None
) -> tuple[str, int, int]:
    """report.md with every number that names a set of items linked to it; (text, linked, numbers)."""
    values, links = facet_values(rows), dict(links or {})
    headings: dict[int, str] = {}
    out, header, linked, numbers = [], None, 0, 0
    for line in markdown.split("\n"):
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            headings = {k: v for k, v in headings.items() if k < level} | {level: line.lstrip("#").strip()}
            header = None
        if not line.startswith("|"):
            header = None if line.strip() else header
            out.append(line)
            continue
        cells = _cells(line)
        if header is None:
            header = cells
            out.append(line)
            continue
        if all(re.fullmatch(r":?-+:?", c) for c in cells):
            out.append(line)
            continue
        context = heading_filter([headings[k] for k in sorted(headings) if k > 1], values)
        row_filter: dict[str, str] = {}
        aggregate = False
        for c in cells:
            if NUMBER.fullmatch(c) or not c:
                continue
            found = lookup(c, values, links)
            if found:
                row_filter.update(found)
            aggregate |= label(c).lower() in AGGREGATE
        new = []
        for i, c in enumerate(cells):
            if not NUMBER.fullmatch(c):
                new.append(c)
                continue
            numbers += 1
            column = lookup(header[i], values, links) if i < len(header) else None
            every = i < len(header) and label(header[i]).lower() in AGGREGATE  # an "all" column
            if not (row_filter or column or aggregate or every):
                new.append(c)
                continue
            linked += 1
            new.append(f"[{c}]({href({**context, **row_filter, **(column or {})})})")
        out.append("| " + " | ".join(new) + " |")
    return "\n".join(out), linked, numbers


def render(markdown: str, rows: list[dict], links: Mapping[str, dict] | None = None) -> tuple[str, int, int]:
    """report.md as HTML with its numbers linked; (html, linked, numbers)."""
    from markdown_it import MarkdownIt

    if markdown.startswith("# "):  # the page's own title says it
        markdown = markdown.split("\n", 1)[1] if "\n" in markdown else ""
    text, linked, numbers = link_numbers(markdown, rows, links)
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    return md.render(text), linked, numbers
