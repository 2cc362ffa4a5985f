"""``render(report) -> str``: the GPU check's JSON as Markdown tables (what ``gpu_check.md`` holds)."""

from __future__ import annotations

GIB = 2**30


def _num(v, fmt="{:.3g}") -> str:
    return "—" if v is None else fmt.format(v)


def _table(head: list[str], rows: list[list]) -> list[str]:
    return [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        *("| " + " | ".join(str(c) for c in r) + " |" for r in rows),
        "",
    ]


def _exactness(s: dict) -> list[str]:
    rows = []
    for r in s["rows"]:
        apart, vs = r["shared_vs_full"], r.get("vs_float32")
        rows.append(
            [
                r["dtype"],
                r["rows"],
                f"{r['lm_tokens_full']} / {r['lm_tokens_shared']}",
                _num(apart["policy"]),
                _num(apart["reference"]),
                _num(apart["loss"]),
                f"{_num(apart['gradients'])} ({apart['worst_gradient']}; {r['parameters_with_gradient']} tensors)",
                f"{_num(vs['shared']['gradients'])} / {_num(vs['full']['gradients'])}" if vs else "—",
                r["rule"],
                "finite" if r["parameters_finite_after_step"] else "NON-FINITE",
                "yes" if r["passed"] else "**no**",
            ]
        )
    head = [
        "dtype",
        "rows",
        "LM tokens full / shared",
        "policy log-probs",
        "reference log-probs",
        "loss",
        "gradients (worst tensor)",
        "gradient distance to fp32: shared / full",
        "rule",
        "weights after step",
        "passed",
    ]
    return ["Shared prefixes vs full rows, relative differences:", "", *_table(head, rows)]


def _attention(s: dict) -> list[str]:
    rows = []
    for r in s["rows"]:
        if not r["loaded"]:
            rows.append([r["requested"], "no", "—", "—", "—", r["error"].split("\n")[0][:160], "—", "—", "—"])
            continue
        ops = r["ops"]
        note = r["fallback_reason"] or "; ".join(r["logged"]) or "—"
        rows.append(
            [
                r["requested"],
                "yes",
                r["kernel"],
                r["layout"],
                "yes" if r["shared_prefix_ran"] else "no",
                note,
                ", ".join(ops["language_model"]) or "—",
                ", ".join(ops["encoders"]) or "—",
                _num(r["logps_vs_sdpa_full_rows"]),
            ]
        )
    head = [
        "requested",
        "loads",
        "kernel",
        "layout",
        "shared prefix ran",
        "fallback reason / error",
        "LM attention ops",
        "encoder attention ops",
        "log-probs vs sdpa full rows",
    ]
    return [f"{s['rows_scored']} rows (MVIT + MAT, y_w / y_l), no grad:", "", *_table(head, rows)]


def _memory(s: dict) -> list[str]:
    runs = _table(
        [
            "mode",
            "layers",
            "LM tokens",
            "positions",
            "peak allocated GiB",
            "check estimate GiB",
            "peak / estimate",
            "saved tensors GiB",
        ],
        [
            [
                r["mode"],
                r["layers"],
                r["lm_tokens"],
                r["positions"],
                _num(r["peak_bytes"] and r["peak_bytes"] / GIB, "{:.2f}"),
                f"{r['estimate_total'] / GIB:.2f}",
                _num(r["peak_vs_estimate"], "{:.3f}"),
                f"{r['saved_bytes'] / GIB:.3f}",
            ]
            for r in s["runs"]
        ],
    )
    per_layer = _table(
        [
            "mode",
            "allocator B / LM token / layer",
            "check estimate",
            "ratio",
            "saved B / position / layer",
            "formula",
            "ratio",
            "positions per LM token",
        ],
        [
            [
                r["mode"],
                _num(r["allocator_per_lm_token"], "{:,.0f}"),
                f"{r['estimate_per_lm_token']:,.0f}",
                _num(r["allocator_vs_estimate"], "{:.3f}"),
                f"{r['saved_per_position']:,.0f}",
                f"{r['formula_per_position']:,}",
                f"{r['saved_vs_formula']:.3f}",
                f"{r['positions_per_lm_token']:.2f}",
            ]
            for r in s["per_layer"]
        ],
    )
    return [*runs, "Per decoder layer (2 layers minus 1):", "", *per_layer]


def _throughput(s: dict) -> list[str]:
    rows = s["rows"]
    kind = rows[0]["memory_kind"] if rows else ""
    return [
        f"{s['layers']} decoder layers, best of {s['rounds']} rounds after {s['warmup']} untimed:",
        "",
        *_table(
            [
                "config",
                "rows",
                "prefixes",
                "LM tokens / forward",
                "positions",
                "step s (best)",
                "step s (median)",
                "LM tokens / s",
                "speed vs DPO full",
                "token ideal",
                f"{kind} MiB",
            ],
            [
                [
                    r["config"],
                    r["rows"],
                    r["prefixes"],
                    r["lm_tokens"],
                    r["positions"],
                    f"{r['step_s_best']:.4f}",
                    f"{r['step_s_median']:.4f}",
                    f"{r['lm_tokens_per_s']:,.0f}",
                    f"{r['speed_vs_dpo_full']:.2f}x",
                    f"{r['token_ideal']:.2f}x",
                    f"{r['memory_bytes'] / 2**20:,.0f}",
                ]
                for r in rows
            ],
        ),
    ]


def _real_row(s: dict) -> list[str]:
    keys = ("video", "audio", "text", "row_tokens")
    return [
        f"{s['clip']}, video grid {s['video_grid_thw']}, {s['rows']} rows:",
        "",
        *_table(
            ["tokens per row", *keys],
            [[src, *(f"{s[src][k]:.1f}" for k in keys)] for src in ("predicted", "measured")],
        ),
    ]


RENDER = {
    "exactness": ("Exactness: shared prefixes vs full rows, one CAVPref step", _exactness),
    "attention": ("Attention implementations", _attention),
    "memory": ("Memory: measured vs `cavpref check`'s estimate", _memory),
    "throughput": ("Throughput at the shared-prefix benchmark's proportions", _throughput),
    "real_row": ("Real processor row vs `cavpref check`", _real_row),
}


def render(report: dict) -> str:
    env = report["environment"]
    lines = [
        "# GPU check",
        "",
        ", ".join(f"{k} {v}" for k, v in env.items() if v is not None),
        "",
        f"elapsed {report.get('elapsed_s')} s; all sections ok: {report.get('ok')}",
        "",
    ]
    for name, section in report["sections"].items():
        title, fn = RENDER[name]
        lines += [f"## {title}", "", f"status: {section['status']} ({section.get('seconds')} s)", ""]
        if section["status"] == "error":
            lines += ["```", section["traceback"].rstrip(), "```", ""]
        elif section["status"] != "skipped":
            lines += fn(section)
        else:
            lines += [section["reason"], ""]
    return "\n".join(lines)
