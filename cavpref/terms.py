"""The objective as a weighted list of terms, the way TRL's ``DPOConfig`` combines losses (``loss_type`` +
``loss_weights``), with CAVPref's own terms and the literature's remedies beside TRL's.

A recipe names the terms of its objective and their weights::

    method: cavpref
    loss_type: [cavpref_y, cavpref_v, cavpref_a, sft]      # CAVPref + 0.2 · NLL of the chosen response (RPO)
    loss_weights: [1.0, 1.0, 1.0, 0.2]

    method: dpo
    loss_type: [sigmoid, cavpref_v, cavpref_a]            # DPO + CAVPref's visual / audio terms

Members (``TERM_HELP`` is the list the docs and ``--help`` print):

- ``cavpref_y`` / ``cavpref_v`` / ``cavpref_a``: CAVPref's components (Eq. 1-3, ``cavpref.loss``), each with the
  method's β rule (calibrated from ΔS unless ``beta_y`` / ``beta_v`` / ``beta_a`` fix it; ``method: dpo`` uses
  ``beta`` for y) and aggregation (Eq. 5 under ``method: cavpref``, the plain mean otherwise), with
  ``dpop_lambda``'s penalty inside the sigmoid when it is set;
- ``ancpo_y`` / ``ancpo_v`` / ``ancpo_a``: mDPO's anchored preference on the component's chosen row
  (``cavpref.remedies.ancpo_ell``, margin ``ancpo_delta``);
- ``sft``: TRL's ``sft`` loss type (the token-mean NLL of the chosen response), computed over the whole optimizer
  batch so any split of it gives one objective (TRL's own code takes the mean per micro-batch);
- any other name: a TRL ``loss_type`` (``sigmoid``, ``ipo``, ``hinge``, ``apo_zero``, …) computed by TRL's own
  ``DPOTrainer`` loss code on the y pair with TRL's ``beta``; TRL itself says when a name is unknown.

Why a list and not more methods: the remedies for over-abstention combine (an NLL term *and* a chosen-reward
anchor, on CAVPref or on DPO), and a list lets each run say exactly which, logged per term as
``term/<name>``. ``method`` keeps its meaning (the β rule, the aggregation, the reference): when ``loss_type`` is
TRL's default (``[sigmoid]``, no weights) a CAVPref method's objective is its own three terms, unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

CAVPREF_TERMS = {"cavpref_y": "y", "cavpref_v": "v", "cavpref_a": "a"}
ANCPO_TERMS = {"ancpo_y": "y", "ancpo_v": "v", "ancpo_a": "a"}
OWN_TERMS = (*CAVPREF_TERMS, *ANCPO_TERMS, "sft")
TERM_HELP = {
    "cavpref_y": "CAVPref's y term (Eq. 1): chosen vs rejected under the presented media",
    "cavpref_v": "CAVPref's visual term (Eq. 2): the anchor response under clean vs perturbed video (η = 1 rows)",
    "cavpref_a": "CAVPref's audio term (Eq. 3): the anchor response under clean vs perturbed audio (γ = 1 rows)",
    "ancpo_y": "mDPO's anchor: -log σ(β_y (log π(y_w) - log π_ref(y_w)) - ancpo_delta)",
    "ancpo_v": "mDPO's anchor on the visual anchor's clean row (η = 1 rows)",
    "ancpo_a": "mDPO's anchor on the audio anchor's clean row (γ = 1 rows)",
    "sft": "TRL's sft: the token-mean NLL of the chosen response over the optimizer batch (RPO's NLL term)",
}
_TRL_DEFAULT = ["sigmoid"]


@dataclass(frozen=True)
class Term:
    """One weighted term of the objective. ``kind``: cavpref | ancpo | sft | trl; ``component``: y | v | a for
    the first two."""

    name: str
    weight: float
    kind: str
    component: str | None = None


def resolve_terms(
    method: str, loss_type: Sequence[str], loss_weights: Sequence[float] | None
) -> tuple[Term, ...]:
    """The objective's terms for ``method`` given the config's ``loss_type`` / ``loss_weights`` (module
    docstring); one-line ``ValueError`` naming the key for a list that cannot be meant."""
    names = [loss_type] if isinstance(loss_type, str) else list(loss_type)
    default = names == _TRL_DEFAULT and loss_weights is None
    if method == "sft":
        if not default:
            raise ValueError(
                f"CAVPrefConfig.loss_type={names!r}: method sft is the NLL of the chosen response alone; "
                "combine it with a preference loss under method dpo or cavpref (loss_type: [..., sft])"
            )
        return (Term("sft", 1.0, "sft"),)
    if default and method != "dpo":
        names = list(CAVPREF_TERMS)
    weights = [1.0] * len(names) if loss_weights is None else list(loss_weights)
    if len(weights) != len(names):
        raise ValueError(
            f"CAVPrefConfig.loss_weights has {len(weights)} weights for the {len(names)} terms of loss_type {names}"
        )
    if not names:
        raise ValueError("CAVPrefConfig.loss_type is empty: name at least one term")
    seen = set()
    terms = []
    for name, weight in zip(names, weights):
        if name in seen:
            raise ValueError(f"CAVPrefConfig.loss_type names {name!r} twice: give it one weight instead")
        seen.add(name)
        if name.startswith(("cavpref", "ancpo")) and name not in OWN_TERMS:
            raise ValueError(
                f"CAVPrefConfig.loss_type: unknown term {name!r} (CAVPref's are {list(OWN_TERMS)})"
            )
        if name == "sigmoid" and method != "dpo":
            raise ValueError(
                f"CAVPrefConfig.loss_type: under method {method}, CAVPref's y term is 'cavpref_y'; TRL's 'sigmoid' "
                "(fixed β, plain mean) is method dpo's"
            )
        if name in CAVPREF_TERMS:
            terms.append(Term(name, float(weight), "cavpref", CAVPREF_TERMS[name]))
        elif name in ANCPO_TERMS:
            terms.append(Term(name, float(weight), "ancpo", ANCPO_TERMS[name]))
        elif name == "sft":
            terms.append(Term(name, float(weight), "sft"))
        else:
            terms.append(Term(name, float(weight), "trl"))
    if method != "dpo" and not any(t.kind == "cavpref" for t in terms):
        raise ValueError(
            f"CAVPrefConfig.loss_type={names!r}: method {method} is CAVPref, and the list has none of its terms "
            f"({list(CAVPREF_TERMS)}); TRL's loss types alone are method dpo's"
        )
    return tuple(terms)


def anchor_components(terms: Sequence[Term]) -> set[str]:
    """The anchor components (``v`` / ``a``) some term reads: their rows are built and their switches apply."""
    return {t.component for t in terms if t.component in ("v", "a")}


__all__ = [
    "ANCPO_TERMS",
    "CAVPREF_TERMS",
    "OWN_TERMS",
    "TERM_HELP",
    "Term",
    "anchor_components",
    "resolve_terms",
]
