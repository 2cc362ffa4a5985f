"""The one matplotlib set-up: a headless (Agg) ``pyplot``, imported only when a figure is drawn.

Reports, the quickstart and the sweep all draw through ``pyplot()``, so no command opens a window or needs a
display, and importing a report module does not import matplotlib.
"""

from __future__ import annotations


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (safe on servers and in CI)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
