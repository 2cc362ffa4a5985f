"""The project's one JSONL reader: lines split on ``"\\n"`` only, errors naming ``file:line``.

JSON allows U+2028 / U+2029 / U+0085 raw inside a string, and ``json.dumps(..., ensure_ascii=False)`` writes
them raw; ``str.splitlines()`` splits on each of them, so a reader built on it refuses a valid record as "Unterminated string". JSON Lines
(https://jsonlines.org) separates records by ``"\\n"`` alone (a ``"\\r"`` before it is JSON whitespace), so
every reader of the project's JSONL inputs and outputs goes through ``split_lines`` here. A blank line (JSON
whitespace only) is skipped; every other line is one record.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

JSON_WHITESPACE = " \t\r"  # json.loads's whitespace besides "\n" (str.strip() would also take U+2028 ...)


class JsonlError(ValueError):
    """A JSONL file that cannot be read, or one of its lines that is not JSON: ``file:line: problem``."""

    def __init__(self, path: str | Path, line: int | None, problem: str, detail: str = "", hint: str = ""):
        self.path, self.line, self.problem, self.detail, self.hint = str(path), line, problem, detail, hint
        where = f"{path}:{line}" if line is not None else str(path)
        super().__init__(f"{where}: {self.said}")

    @property
    def said(self) -> str:
        """The message without the file and line."""
        return (
            self.problem
            + (f" ({self.detail})" if self.detail else "")
            + (f"; {self.hint}" if self.hint else "")
        )


def decode(raw: bytes, path: str | Path) -> str:
    """UTF-8 text (a leading BOM dropped); a bad byte is named by its line and column."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        column = err.start - (raw.rfind(b"\n", 0, err.start) + 1) + 1
        detail = f"byte 0x{raw[err.start]:02x} at column {column}"
        raise JsonlError(path, line, "not UTF-8", detail, "re-save the file as UTF-8") from None


def read_text(path: str | Path) -> str:
    try:
        raw = Path(path).read_bytes()
    except OSError as err:
        raise JsonlError(path, None, "cannot read", str(err.strerror or err)) from None
    return decode(raw, path)


def split_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the non-blank lines, split on ``"\\n"`` only."""
    return [(n, line) for n, line in enumerate(text.split("\n"), 1) if line.strip(JSON_WHITESPACE)]


def parse_line(line: str, path: str | Path, n: int) -> Any:
    try:
        return json.loads(line)
    except json.JSONDecodeError as err:
        raise JsonlError(path, n, "not valid JSON", f"col {err.colno}: {err.msg}") from None


def read_jsonl(
    path: str | Path, *, text: str | None = None, keep_errors: bool = False
) -> list[tuple[int, Any]]:
    """(line number, record) of every non-blank line of ``path`` (or of ``text`` read from it). A line that is
    not JSON raises ``JsonlError``, or with ``keep_errors`` takes the error's place in the list (for readers
    that skip bad records and count them)."""
    text = read_text(path) if text is None else text
    out: list[tuple[int, Any]] = []
    for n, line in split_lines(text):
        try:
            out.append((n, parse_line(line, path, n)))
        except JsonlError as err:
            if not keep_errors:
                raise
            out.append((n, err))
    return out
