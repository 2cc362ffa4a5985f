"""How likelihood mode reads an answer from the options' log-likelihoods: three protocols, all recorded.

Likelihood mode scores every option string ``"A. <text>"`` (plus, in the base setting of an abstention task,
the task's abstention sentence) and answers with the best one. *Best* depends on how a log-likelihood is read:

- ``sum``: the summed log-prob of the whole option (end of turn included). Long options pay for every token,
  so where options differ in length the shortest wins more often than the model's belief says — on
  AVTrustBench's temporal tasks the short "D. None of the above" against "A. the whistle clip followed by
  the bell clip" (lmms-eval reports this as ``acc``).
- ``per_token``: that sum divided by the option's token count, the length-normalised score (lmms-eval's
  ``acc_norm`` divides by length too).
- ``letter``: the log-prob of the answer letter alone as the start of the answer (MMLU-style); the option
  text is not scored, so length cannot matter, but the model must bind its answer to the letter. A candidate
  without a letter (the base setting's abstention sentence) cannot be chosen under it.

One forward gives ``sum`` and ``per_token``; the letter is its own continuation of the same prefix (packed with
the options, ``AVModelIO.option_scores``). Every pass records all three (``scores`` and ``choices``), so a run
reports all three and ``option_score`` only decides which one is the headline (``docs/evaluation.md``).
Pure functions; ``tests/eval/test_option_score.py`` checks them with hand-computed numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

#: the protocols, in the order reports show them
OPTION_SCORES = ("sum", "per_token", "letter")


def option_values(scores: Mapping[str, Sequence[float | None]], protocol: str) -> list[float | None]:
    """Each candidate's value under ``protocol`` (None: the candidate cannot be chosen under it).

    ``scores``: ``{"sum": [...], "tokens": [...], "letter": [...]}`` as a likelihood pass records them."""
    if protocol == "sum":
        values = list(scores["sum"])
    elif protocol == "per_token":
        values = [s / n for s, n in zip(scores["sum"], scores["tokens"])]
    elif protocol == "letter":
        values = list(scores["letter"])
    else:
        raise ValueError(f"option_score must be one of {OPTION_SCORES}, got {protocol!r}")
    return [None if v is None or math.isnan(v) else float(v) for v in values]


def best_option(scores: Mapping[str, Sequence[float | None]], protocol: str) -> int | None:
    """Index of the best candidate under ``protocol`` (the first on a tie), None when none can be chosen."""
    values = option_values(scores, protocol)
    ranked = [i for i, v in enumerate(values) if v is not None]
    return max(ranked, key=lambda i: values[i]) if ranked else None


def check_option_score(protocol: str) -> str:
    if protocol not in OPTION_SCORES:
        raise ValueError(f"--option_score must be one of {', '.join(OPTION_SCORES)}, got {protocol!r}")
    return protocol
