"""The objective's term list (``cavpref.terms``) as the config reads it: defaults, combinations, refusals."""

from __future__ import annotations

import pytest

from cavpref.terms import anchor_components, resolve_terms


def names(terms):
    return [(t.name, t.weight, t.kind, t.component) for t in terms]


def test_defaults_keep_every_method_as_it_was():
    assert names(resolve_terms("cavpref", ["sigmoid"], None)) == [
        ("cavpref_y", 1.0, "cavpref", "y"),
        ("cavpref_v", 1.0, "cavpref", "v"),
        ("cavpref_a", 1.0, "cavpref", "a"),
    ]
    assert names(resolve_terms("dpo", ["sigmoid"], None)) == [("sigmoid", 1.0, "trl", None)]
    assert names(resolve_terms("sft", ["sigmoid"], None)) == [("sft", 1.0, "sft", None)]


def test_the_issues_two_combinations():
    cav_sft = resolve_terms("cavpref", ["cavpref_y", "cavpref_v", "cavpref_a", "sft"], [1, 1, 1, 0.2])
    assert names(cav_sft)[-1] == ("sft", 0.2, "sft", None)
    dpo_va = resolve_terms("dpo", ["sigmoid", "cavpref_v", "cavpref_a"], None)
    assert [t.kind for t in dpo_va] == ["trl", "cavpref", "cavpref"] and anchor_components(dpo_va) == {
        "v",
        "a",
    }
    assert anchor_components(resolve_terms("cavpref", ["cavpref_y", "ancpo_v"], None)) == {"v"}


@pytest.mark.parametrize(
    "method, loss_type, weights, match",
    [
        ("cavpref", ["sigmoid", "sft"], None, "CAVPref's y term is 'cavpref_y'"),
        ("cavpref", ["ipo"], None, "none of its terms"),
        ("cavpref", ["cavpref_y", "cavpref_y"], None, "names 'cavpref_y' twice"),
        ("cavpref", ["cavpref_q"], None, "unknown term 'cavpref_q'"),
        ("cavpref", ["cavpref_y", "sft"], [1.0], "1 weights for the 2 terms"),
        ("cavpref", ["sigmoid"], [2.0], "CAVPref's y term is 'cavpref_y'"),
        ("sft", ["sft"], None, "method sft is the NLL of the chosen response alone"),
        ("dpo", [], None, "empty"),
    ],
)
def test_lists_that_cannot_be_meant_are_refused(method, loss_type, weights, match):
    with pytest.raises(ValueError, match=match):
        resolve_terms(method, loss_type, weights)


def test_the_config_switches_only_the_anchors_a_term_reads(tmp_path):
    from cavpref.config import CAVPrefConfig

    def cfg(**kw):
        return CAVPrefConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", **kw)

    assert cfg(method="dpo").switches()["MVIT"] == (0, 0) and cfg(method="dpo").row_method == "dpo"
    both = cfg(method="dpo", loss_type=["sigmoid", "cavpref_v", "cavpref_a"])
    assert (
        both.row_method == "cavpref"
        and both.switches()["MVIT"] == (1, 0)
        and both.switches()["MAIT"] == (0, 1)
    )
    y_only = cfg(loss_type=["cavpref_y", "sft"], loss_weights=[1.0, 0.2])
    assert y_only.switches()["MVIT"] == (0, 0) and y_only.row_method == "dpo"
    assert cfg().switches()["MVIT"] == (1, 0)  # the paper's CAVPref, unchanged
    assert cfg(
        loss_type=["cavpref_y", "cavpref_v", "cavpref_a", "sft"], loss_weights=[1, 1, 1, 0.2]
    ).loss_summary()["terms"] == {"cavpref_y": 1.0, "cavpref_v": 1.0, "cavpref_a": 1.0, "sft": 0.2}
    with pytest.raises(ValueError, match="dpop_lambda=1.0: DPOP's penalty sits inside CAVPref's terms"):
        cfg(method="dpo", dpop_lambda=1.0)
    with pytest.raises(ValueError, match="dpop_lambda must be finite and >= 0"):
        cfg(dpop_lambda=-1.0)
