"""Every `cavpref eval …` command parses with `cavpref.parsing.parse_args` (issue 12): a config file plus
command-line overrides, unknown keys are errors, `--help` lists every key."""

import pytest

from cavpref.apps.cli import main as cavpref_main
from cavpref.eval.cli import parse


def test_avtrustbench_yaml_plus_overrides(tmp_path):
    cfg = tmp_path / "e.yaml"
    cfg.write_text("model: ckpt\ndata: bench\noutput: run\nlimit: 10\nnum_frames: 4\njudge_model: jm\n")
    for argv in ([str(cfg), "--limit", "3"], ["--config", str(cfg), "--limit", "3"]):
        args, _ = parse("avtrustbench", argv)
        assert (args.model, args.data, args.output, args.limit, args.num_frames) == (
            "ckpt",
            "bench",
            "run",
            3,
            4,
        )
        assert args.judge_model == "jm" and args.frame_policy().num_frames == 4


def test_unknown_keys_raise(tmp_path):
    cfg = tmp_path / "e.yaml"
    cfg.write_text("data: bench\nnot_a_key: 1\n")
    with pytest.raises(ValueError, match="not_a_key"):
        parse("avtrustbench", [str(cfg)])
    with pytest.raises(ValueError, match="not_a_key"):
        parse("avtrustbench", ["--data", "b", "--not_a_key", "1"])
    with pytest.raises(ValueError, match="nope"):
        parse("mmar", ["--data", "b", "--nope", "1"])


@pytest.mark.parametrize(
    "command, keys",
    [
        (
            "avtrustbench",
            ["--num_frames", "--frame_height", "--judge_model", "--endpoint_model", "--circular"],
        ),
        ("compare", ["--runs", "--labels", "--metric"]),
        ("report", ["--run"]),
    ],
)
def test_help_lists_every_key(command, keys, capsys):
    with pytest.raises(SystemExit):
        parse(command, ["--help"])
    out = capsys.readouterr().out
    assert all(k in out for k in keys), out


def test_benchmark_help_lists_shared_groups(capsys):
    with pytest.raises(SystemExit):
        parse("score", ["--benchmark", "traceav", "--help"])
    out = capsys.readouterr().out
    for k in (
        "--protocol",
        "--num_frames",
        "--judge_model",
        "--endpoint_model",
        "--predictions",
        "--long_num_frames",
    ):
        assert k in out, k


def test_benchmark_yaml_plus_overrides(tmp_path):
    cfg = tmp_path / "m.yaml"
    cfg.write_text("model: m\ndata: d\noutput: o\nprotocol: official\nraters: 3\n")
    args, options = parse("mmar", [str(cfg), "--raters", "5"])
    assert (args.protocol, options.raters, args.max_new_tokens) == ("official", 5, 1024)


def test_compare_positional_and_flags(tmp_path):
    ns, html = parse(
        "compare", ["r1", "r2", "--labels", "ZS", "FT", "--metric", "circular", "--html", "c.html"]
    )
    assert ns.runs == ["r1", "r2"] and ns.labels == ["ZS", "FT"] and ns.metric == "circular"
    assert ns.html == "c.html" and not html.no_media  # the HTML page's media keys parse with it
    cfg = tmp_path / "c.yaml"
    cfg.write_text("runs: [a, b]\nsetting: base\n")
    ns, _ = parse("compare", [str(cfg), "--metric", "vanilla"])
    assert ns.runs == ["a", "b"] and ns.setting == "base" and ns.metric == "vanilla"
    with pytest.raises(ValueError, match="metric"):
        parse("compare", ["r1", "--metric", "best"])


def test_report_positional(tmp_path):
    ns, html = parse("report", ["RUN"])
    assert ns.run == "RUN" and not ns.html
    ns, html = parse("report", ["RUN", "--html", "--no_media", "--media_budget_mb", "5"])
    assert ns.html and html.no_media and html.media_budget_mb == 5.0
    assert cavpref_main(["eval", "report"]) == 2  # no run folder named


def test_score_routes_on_the_benchmark_key_of_a_config_file(tmp_path):
    """``eval score`` picks the benchmark's argument classes before parsing: from ``--benchmark`` or, as
    here, from the file's ``benchmark:`` key (it used to fall through to AVTrustBench)."""
    from cavpref.eval.cli import benchmark_in

    cfg = tmp_path / "score.yaml"
    cfg.write_text("benchmark: mmar\npredictions: p.jsonl\n")
    assert benchmark_in([str(cfg)]) == "mmar"
    assert benchmark_in(["--config", str(cfg)]) == "mmar"
    assert benchmark_in(["--config", str(cfg), "--benchmark", "aura"]) == "aura"
    assert benchmark_in(["--predictions", "p.jsonl"]) is None
