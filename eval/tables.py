"""Markdown table helpers every report shares (AVTrustBench's and the reasoning benchmarks')."""

from __future__ import annotations

from collections.abc import Sequence


def fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    return [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
    ]
