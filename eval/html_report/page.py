"""One self-contained HTML page: the template, its script and its styles inlined, the rows as JSON.

Nothing on the page is fetched: the script and the styles are inline, the plots are data URIs, the media are
files next to the page. A Content-Security-Policy in the page makes that a rule the browser enforces —
only the page's own script runs (its sha256 is the one allowed), and images and audio may come from the
page's folder or data URIs only; no connection, font, frame or form target is allowed — so a string
from a record (a model's answer holding ``<img src=http://…>``) can neither run nor load anything, even if
it were ever parsed as markup (the script builds the DOM with text only).
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

ASSETS = Path(__file__).with_name("assets")


def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element: no "</script>", "<!--" or "&" can close or confuse it."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def csp(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    return "; ".join(
        [
            "default-src 'none'",
            f"script-src 'sha256-{digest}'",
            "style-src 'unsafe-inline'",
            "img-src 'self' data: file:",
            "media-src 'self' file:",
            "connect-src 'none'",
            "font-src 'none'",
            "frame-src 'none'",
            "form-action 'none'",
            "base-uri 'none'",
        ]
    )


def plot_uris(folder: Path) -> list[tuple[str, str]]:
    """The run's plots/*.png as (name, data URI), inlined so the page shows them alone."""
    if not folder.is_dir():
        return []
    return [
        (p.name, "data:image/png;base64," + base64.b64encode(p.read_bytes()).decode())
        for p in sorted(folder.glob("*.png"))
    ]


def render(
    *,
    title: str,
    meta: list[tuple[str, str]],
    warnings: list[str],
    summary_html: str,
    plots: list[tuple[str, str]],
    items_note: str,
    data: dict,
) -> str:
    """The page's HTML text."""
    from jinja2 import Environment
    from markupsafe import Markup

    js = _asset("report.js")
    env = Environment(autoescape=True, keep_trailing_newline=True)
    template = env.from_string(_asset("page.html.j2"))
    return template.render(
        title=title,
        meta=meta,
        warnings=warnings,
        summary_html=Markup(summary_html),  # markdown-it output with raw HTML off: escaped text
        plots=plots,
        items_note=items_note,
        data_json=Markup(script_json(data)),
        js=Markup(js),
        css=Markup(_asset("report.css")),
        csp=csp(js),
    )
