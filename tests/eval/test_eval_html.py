"""The HTML report of an AVTrustBench run (eval/html_report): what each item shows, its facets, the clean twin,
the media within their budget, secrets, the numbers of report.md linked to the items behind them, the page
rebuilt from the folder, and `eval compare --html`. A served model on loopback answers by a script, so every
item's outcome is known; the page is read back from its embedded JSON (the browser test clicks it)."""

import re
import shutil
from urllib.parse import parse_qsl

import numpy as np
import pytest

from cavpref.apps.cli import main as cavpref_main
from cavpref.eval.html_report import summary
from tests.helpers.html_report_check import (
    LATE,
    SECRET,
    build_data,
    page_data,
    rows_by_id,
    run_eval,
    scripted,
)
from tests.helpers.judge_server import completion

LEAK = "http://127.0.0.1:9/leak.png"


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return build_data(tmp_path_factory.mktemp("html_data"))


@pytest.fixture(scope="module")
def run(data, tmp_path_factory):
    mp = pytest.MonkeyPatch()
    try:
        out = tmp_path_factory.mktemp("html_run") / "run"
        run_eval(data, out, scripted(LEAK), mp, label="scripted")
        yield out
    finally:
        mp.undo()


def test_every_item_shows_its_passes_facets_and_clean_twin(run):
    rows = rows_by_id(run / "report.html")
    assert sorted(rows) == ["c1", "c2", "m6", "p1", "p2", "p3", "p4"]
    facts = {
        i: {k: r["facets"].get(k) for k in ("result", "response", "twin", "pair")} for i, r in rows.items()
    }
    assert facts["c1"] == {"result": "correct", "response": "answered", "twin": "is a twin", "pair": None}
    assert facts["p1"] == {
        "result": "correct",
        "response": "abstained",
        "twin": "has twin",
        "pair": "both right",
    }
    assert facts["c2"] == {"result": "wrong", "response": "answered", "twin": "is a twin", "pair": None}
    assert facts["p2"]["pair"] == "perturbed right, twin wrong" and facts["p2"]["response"] == "abstained"
    assert facts["p3"] == {"result": "wrong", "response": "unparsed", "twin": "no twin", "pair": None}
    assert rows["p1"]["twin"] == "c1" and rows["p2"]["twin"] == "c2"
    assert rows["m6"]["facets"]["status"] == "skipped" and rows["m6"]["reason"] == "media: MediaError"
    # CircularEval: Q1's clean item is right under every rotation, each pass with its own options and prompt
    c1 = rows["c1"]["passes"]
    assert [p["title"] for p in c1] == ["pass 0 — rotation 0", "pass 1 — rotation 1", "pass 2 — rotation 2"]
    for p in c1:
        piano = next(o for o in p["options"] if o[1] == "piano")
        assert piano[2] == ["answer", "chosen"] and f"{piano[0]}. piano" in p["prompt"]
        assert p["output"] == f"The answer is {piano[0]}." and p["correct"] is True
    # the rule that read each answer, or the judge's reply where step 2 decided
    decision = dict(rows["p3"]["passes"][0]["decision"])
    assert decision["judge reply"] == "No match found" and decision["chosen"] == "unparsed"
    assert dict(rows["p1"]["passes"][0]["decision"])["rule"].startswith("abstention")


def test_media_strips_clips_and_undecodable_items(run):
    from PIL import Image

    rows = rows_by_id(run / "report.html")
    c1 = rows["c1"]["media"]
    strip = Image.open(run / c1["strip"])
    assert strip.height == 72 and strip.width == 2 * 96  # the 2 frames the model saw, 64x48 scaled to 72 px
    assert np.asarray(strip).mean() == pytest.approx(60, abs=4)  # a.mp4's grey level
    assert (run / c1["audio"]).stat().st_size > 0 and c1["times"] == ["0.25", "0.75"]
    assert rows["p1"]["media"] == c1  # the same clip: one set of files
    assert "audio" not in rows["p2"]["media"] and rows["p2"]["media"]["note"] == "no audio stream"  # MAT
    assert "strip" not in rows["p4"]["media"] and rows["p4"]["media"]["note"] == "no video stream"  # MVT
    assert "missing.mp4" in rows["m6"]["media"]["error"]  # shows why it could not be decoded


def test_secrets_and_markup_from_records_never_reach_the_page(run, monkeypatch):
    from cavpref.redact import add_secret

    html = (run / "report.html").read_text()
    assert SECRET not in html and "[REDACTED]" in html  # the echoed key, masked
    assert "window.leaked" in html and "<script>window.leaked" not in html and f'<img src="{LEAK}' not in html
    assert LATE in html
    add_secret(LATE)  # a secret registered later (a key in a data row) is masked when the page is rebuilt
    assert cavpref_main(["eval", "report", str(run), "--html", "--no_media"]) == 0
    assert LATE not in (run / "report.html").read_text()


def filtered(rows: list[dict], href: str) -> list[dict]:
    wanted = dict(parse_qsl(href.split("?", 1)[1]))
    return [r for r in rows if all(r["facets"].get(k) == v for k, v in wanted.items())]


def test_each_number_of_report_md_links_to_the_items_behind_it(run):
    rows = page_data(run / "report.html")["rows"]
    from cavpref.eval.benchmarks.avtrustbench.report import report_links

    text, linked, numbers = summary.link_numbers((run / "report.md").read_text(), rows, report_links())
    table = text.split("## Accuracy per task — instruction setting")[1].split("\n\n")[1].split("\n")[2:]
    checked = 0
    for line in table:
        cells = [c.strip() for c in line.strip("|").split("|")]
        n_link, circ_link = cells[2], cells[3]
        n, n_href = re.fullmatch(r"\[(\d+)\]\((.*)\)", n_link).groups()
        done = [r for r in filtered(rows, n_href) if r["facets"]["status"] == "evaluated"]
        assert len(done) == int(n), line
        if circ_link == "–":  # MVIT: its one item was skipped
            assert not done and filtered(rows, n_href)[0]["id"] == "m6"
            continue
        circ, c_href = re.fullmatch(r"\[([\d.]+)\]\((.*)\)", circ_link).groups()
        assert c_href == n_href
        assert round(100 * sum(r["circular"] for r in done) / len(done), 2) == float(circ), line
        checked += 1
    assert checked == 6  # MCIT ICIT MVT MAT CLEAN and all
    trust = text.split("### Trust — instruction setting")[1]
    pairs = re.search(r"\| MCIT \| \[(\d+)\]\((.*?)\)", trust)
    assert int(pairs.group(1)) == len(filtered(rows, pairs.group(2))) == 1  # p1 and its twin c1
    # only the items table's run-level counts (rows read, passes run, …) are not about a set of items
    plain = [line for line in text.split("\n") if re.search(r"\| \d", line) and "](#items" not in line]
    assert all(
        re.match(r"\| (rows read|invalid rows|outside|passes|incomplete|unparsed)", p) for p in plain
    ), plain
    assert linked == numbers - len(plain) - sum("–" in p for p in plain)


def test_budget_no_media_cap_and_rebuild_from_the_folder(run, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    shutil.rmtree(copy / "report_media")
    assert cavpref_main(["eval", "report", str(copy), "--html", "--media_budget_mb", "0.001"]) == 0
    rows = rows_by_id(copy / "report.html")
    written = sorted((copy / "report_media").iterdir())
    sizes = {p.stem: 0 for p in written}
    for p in written:
        sizes[p.stem] += p.stat().st_size
    assert len(sizes) == 1  # the first item's files reached the 1 kB budget; the others say why not
    over = [r for r in rows.values() if "budget" in (r["media"].get("note") or "")]
    assert len(over) == 4 and all("--media_budget_mb" in r["media"]["note"] for r in over)
    assert cavpref_main(["eval", "report", str(copy), "--html", "--no_media", "--html_max_items", "4"]) == 0
    data = page_data(copy / "report.html")
    kept = {r["id"] for r in data["rows"]}
    assert kept == {"c1", "m6", "p1", "p2", "c2"}  # the first item of four tasks, plus p2's clean twin
    assert "This page holds 5 of the 7 items of the run" in (copy / "report.html").read_text()
    assert all(r["media"] == {"note": "media left out (--no_media)"} for r in data["rows"])


def test_a_rerun_with_another_model_shows_only_its_own_records(data, run, tmp_path, monkeypatch):
    out = tmp_path / "run"
    shutil.copytree(run, out)

    def abstains(body, n):
        return 200, {}, completion("None of the above."), 0

    run_eval(data, out, abstains, monkeypatch, endpoint_model="other", label="abstainer")
    (out / "report.html").unlink()
    assert cavpref_main(["eval", "report", str(out), "--html", "--no_media"]) == 0
    rows = rows_by_id(out / "report.html")
    assert all(p["output"] == "None of the above." for r in rows.values() for p in r["passes"])
    assert rows["c1"]["facets"]["result"] == "wrong" and rows["p1"]["facets"]["result"] == "correct"


def test_compare_html_shows_per_item_where_the_runs_differ(data, run, tmp_path, monkeypatch):
    def abstains(body, n):
        return 200, {}, completion("None of the above."), 0

    run_eval(data, tmp_path / "b", abstains, monkeypatch, label="abstainer")
    page = tmp_path / "cmp" / "compare.html"
    assert cavpref_main(["eval", "compare", str(run), str(tmp_path / "b"), "--html", str(page)]) == 0
    data_ = page_data(page)
    assert data_["runs"] == ["scripted", "abstainer"]
    rows = {r["id"]: r for r in data_["rows"]}
    assert rows["c1"]["facets"]["agreement"] == "differ"  # right, then abstained
    assert rows["c1"]["facets"]["result (scripted)"] == "correct"
    assert rows["c1"]["facets"]["result (abstainer)"] == "wrong"
    assert rows["p1"]["facets"]["agreement"] == "all right"
    assert rows["m6"]["facets"]["agreement"] == "not evaluated in every run"
    assert [r["label"] for r in rows["c1"]["runs"]] == ["scripted", "abstainer"]
    assert rows["c1"]["runs"][1]["passes"][0]["output"] == "None of the above."
    assert (tmp_path / "cmp" / "compare_media").is_dir()
