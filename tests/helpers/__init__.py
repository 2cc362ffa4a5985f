"""Shared test helpers (no tests here): servers on loopback, fixture builders, report checks, hand-made inputs.
Imported as ``tests.helpers.<module>`` (pytest puts the repository root on ``sys.path``: ``tests`` is a package)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
