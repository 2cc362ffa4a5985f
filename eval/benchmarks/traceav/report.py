"""TraceAV-Bench's report section and figures: Tables 2 and 3 (sub-tasks, Gen. Avg, MH Avg, random guess),
per dimension, the Figure 5 breakdowns (hop count, first-hop position), and the appendix analyses
(error-answer entropy, the per-video correlation of hallucination and general accuracy)."""

from __future__ import annotations

from cavpref.eval.benchmarks.traceav import data as traceav
from cavpref.eval.tables import fmt
from cavpref.eval.tables import table as _table


def section(results: dict) -> list[str]:
    m = results["metrics"]
    per = m["per_subtask"]
    general = [t for t in traceav.GENERAL if t in per]
    mh = [t for t in traceav.HALLUCINATION if t in per]
    out = []
    if general:
        head = ["", *(f"{per[t]['abbrev']} ({per[t]['dimension']})" for t in general), "Gen. Avg"]
        out += ["## General sub-tasks (layout of TraceAV-Bench Table 2)", ""] + _table(
            head,
            [
                ["model", *(fmt(per[t]["acc"]) for t in general), fmt(m["gen_avg"]["acc"])],
                [
                    "random guess",
                    *(fmt(per[t]["random_guess"]) for t in general),
                    fmt(m["gen_avg"]["random_guess"]),
                ],
            ],
        )
    if mh:
        head = ["", *(per[t]["abbrev"] for t in mh), "MH Avg", "Gen. Avg"]
        out += ["## Multimodal hallucination (layout of Table 3)", ""] + _table(
            head,
            [
                [
                    "model",
                    *(fmt(per[t]["acc"]) for t in mh),
                    fmt(m["mh_avg"]["acc"]),
                    fmt(m["gen_avg"]["acc"]),
                ],
                [
                    "random guess",
                    *(fmt(per[t]["random_guess"]) for t in mh),
                    fmt(m["mh_avg"]["random_guess"]),
                    fmt(m["gen_avg"]["random_guess"]),
                ],
            ],
        )
    for name, key in (("Gen. Avg", "gen_avg"), ("MH Avg", "mh_avg")):
        if m[key]["n_subtasks"] and not m[key]["complete"]:
            out += [f"*{name} is over {m[key]['n_subtasks']} sub-tasks only (a subset was evaluated).*", ""]
    rows = [
        [d, str(v["n"]), str(v["n_subtasks"]), fmt(v["macro"]), fmt(v["micro"])]
        for d, v in m["per_dimension"].items()
    ]
    out += ["## Per dimension", ""] + _table(["Dimension", "N", "sub-tasks", "macro", "micro"], rows)
    rows = [
        [
            f"{t} ({v['abbrev']})",
            str(v["n"]),
            fmt(v["acc"]),
            str(v["abstained"]),
            fmt(v["random_guess"]),
            fmt(v["random_guess_type_aware"]),
        ]
        for t, v in per.items()
    ]
    out += ["## Per sub-task", ""] + _table(
        ["Sub-task", "N", "Acc", "abstained", "random (one letter)", "random (type-aware)"], rows
    )
    for title, key in (
        ("Evidence hops (Figure 5a)", "by_hops"),
        ("First evidence hop position (Figure 5b)", "by_first_hop"),
        ("Question type", "by_question_type"),
    ):
        rows = [[k, str(v["n"]), fmt(v["acc"]), str(v["abstained"])] for k, v in m[key].items()]
        out += [f"## {title}", ""] + _table(["", "N", "Acc", "abstained"], rows)
    out += analyses(m)
    return out + [f"Abstained (no letter parsed): {m['overall']['abstained']} of {m['overall']['n']}.", ""]


def analyses(m: dict) -> list[str]:
    """The appendix's two analyses for this run (absent from results written before they existed)."""
    out = []
    entropy = m.get("error_entropy")
    if entropy:
        rows = [
            [name, str(e["errors"]), str(e["patterns"]), "–" if e["bits"] is None else f"{e['bits']:.3f}"]
            for name, e in (("general sub-tasks", entropy["general"]), ("all sub-tasks", entropy["all"]))
        ]
        out += [
            "## Error-answer entropy (appendix, Figure 10a)",
            "",
            (
                "Shannon entropy of the wrong answers' patterns (the sorted tuple of predicted letters; an "
                "abstention is the empty pattern). The paper plots it against general accuracy across models "
                "(`cavpref eval compare`)."
            ),
            "",
        ] + _table(["over", "wrong answers", "patterns", "entropy (bits)"], rows)
    corr = m.get("video_correlation")
    if corr:
        r = "–" if corr["r"] is None else f"{corr['r']:+.3f}"
        out += [
            "## Hallucination vs general accuracy across videos (appendix, Figure 10b)",
            "",
            (
                f"Pearson r = {r} over {corr['n_videos']} video(s) with both MH and general items (each video's "
                "MH accuracy against its general accuracy; undefined with fewer than two videos or a constant "
                "series)."
            ),
            "",
        ]
    return out


def figures(results: dict) -> list:
    m = results["metrics"]
    per = m["per_subtask"]
    tasks = list(per)
    series = {
        "accuracy": [per[t]["acc"] for t in tasks],
        "random guess": [per[t]["random_guess"] for t in tasks],
    }
    groups = [list(m["by_hops"]), list(m["by_first_hop"])]
    return [
        (
            "traceav_subtasks.png",
            [[per[t]["abbrev"] for t in tasks]],
            [series],
            ["TraceAV-Bench per sub-task"],
        ),
        (
            "traceav_breakdowns.png",
            groups,
            [{"accuracy": [m[k][x]["acc"] for x in g]} for k, g in zip(("by_hops", "by_first_hop"), groups)],
            ["by evidence hops", "by first-hop position"],
        ),
    ]
