"""Paired significance of the difference between two runs on the same items: pure functions.

Two runs scored on the same items are *paired*: the question is not whether two accuracies differ but whether
the per-item outcomes do. Of the items both runs evaluated, only the discordant ones carry information —
``b`` = right in the reference run only, ``c`` = right in the other run only — so the tests read the 2 × 2
table of (reference right?, other right?) per item:

- McNemar's test of ``b`` vs ``c`` (H0: an item is as likely to flip one way as the other). With fewer than
  ``EXACT_BELOW`` discordant items the exact two-sided binomial test (``b`` of ``b + c`` draws at p = 1/2),
  else the χ² statistic with continuity correction (one degree of freedom) — the textbook rule, since the
  χ² approximation is poor for small ``b + c``. Which one gave each p is returned with it.
- A paired bootstrap percentile interval of the accuracy difference (other − reference, in points): the items
  are resampled with replacement, both runs' outcomes of a drawn item together. With binary outcomes a
  resample is fully described by how many of its n draws are discordant each way, a multinomial draw with
  probabilities (b/n, c/n, rest), so each resample costs O(1) whatever n — the same distribution as
  resampling item indices, without an n × resamples matrix. The seed is fixed (``SEED``): the same runs give
  the same interval every time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

EXACT_BELOW = 25  # discordant pairs under which McNemar's p is the exact binomial one
SEED = 0  # the bootstrap's seed: fixed, so a comparison is reproducible
LEVEL = 0.95


@dataclass(frozen=True)
class Paired:
    """The 2 × 2 table of two runs' outcomes on their shared items: ``both`` right, ``b`` reference only,
    ``c`` other only, ``neither``."""

    both: int
    b: int
    c: int
    neither: int

    @property
    def n(self) -> int:
        return self.both + self.b + self.c + self.neither

    @property
    def difference(self) -> float:
        """Other minus reference accuracy, in percentage points."""
        return 100.0 * (self.c - self.b) / self.n if self.n else 0.0


def pair(reference: Mapping[str, bool], other: Mapping[str, bool]) -> Paired:
    """The table over the item ids both runs hold (an item in one run only is not paired, so not counted)."""
    shared = reference.keys() & other.keys()
    cells = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for i in shared:
        cells[(bool(reference[i]), bool(other[i]))] += 1
    return Paired(cells[(True, True)], cells[(True, False)], cells[(False, True)], cells[(False, False)])


def mcnemar(b: int, c: int) -> tuple[float, str]:
    """(two-sided p, ``"exact"`` | ``"chi2"``) of McNemar's test on ``b`` and ``c`` discordant items.
    No discordant item: p = 1 (nothing differs), reported as exact."""
    n = b + c
    if n < EXACT_BELOW:
        k = min(b, c)
        tail = sum(math.comb(n, i) for i in range(k + 1)) / 2**n
        return min(1.0, 2.0 * tail), "exact"
    stat = (abs(b - c) - 1) ** 2 / n
    return math.erfc(math.sqrt(stat / 2)), "chi2"  # the χ²(1) survival function


def bootstrap_interval(
    table: Paired, resamples: int, *, seed: int = SEED, level: float = LEVEL
) -> tuple[float, float]:
    """The paired bootstrap percentile interval (``level``) of ``table.difference``, in points, from
    ``resamples`` resamples of the n shared items (numpy's default generator seeded with ``seed``)."""
    if resamples < 1:
        raise ValueError(f"the bootstrap needs at least one resample, got {resamples}")
    if table.n == 0:
        raise ValueError("no shared items to resample")
    rng = np.random.default_rng(seed)
    n = table.n
    draws = rng.multinomial(n, [table.b / n, table.c / n, (n - table.b - table.c) / n], size=resamples)
    diffs = 100.0 * (draws[:, 1] - draws[:, 0]) / n
    alpha = (1.0 - level) / 2
    # the empirical quantiles themselves (no interpolation between resampled values): the interval's ends
    # are differences some resample had
    lo, hi = np.quantile(diffs, [alpha, 1.0 - alpha], method="inverted_cdf")
    return float(lo), float(hi)
