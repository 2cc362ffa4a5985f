"""The builders' shared pieces, with hand-computed numbers: the agreement statistics, the ledger that must
reconcile, the audit sample and its export, the batch rule, the loudness / scene / window maths and the
resumable stage store."""

import csv
import json

import numpy as np
import pytest

from cavpref.apps.cli import main as cavpref_main
from cavpref.data_prep.builders import media, quality
from cavpref.data_prep.builders.work import BuildError, Stages, StepFailed, Unit, key_of, prepare_out
from cavpref.media.write import write_mp4
from cavpref.output_dir import release_output_dir

# Fleiss (1971) as worked on Wikipedia ("Fleiss' kappa"): 10 items, 14 raters, 5 categories -> 0.210
FLEISS_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def test_fleiss_kappa_matches_the_worked_example():
    labels = [[c for c, n in enumerate(row) for _ in range(n)] for row in FLEISS_COUNTS]
    # P_bar = 0.378, P_e = 0.2128 (category shares .143 .200 .279 .150 .229): (0.378 - 0.2128) / 0.7872
    assert quality.fleiss_kappa(labels) == pytest.approx(0.20993, abs=5e-5)
    assert quality.fleiss_kappa([["pass", "pass"], ["reject", "reject"]]) == pytest.approx(1.0)
    assert quality.fleiss_kappa([["pass", "pass"], ["pass", "pass"]]) == 1.0  # one category only
    with pytest.raises(ValueError, match="same number"):
        quality.fleiss_kappa([["pass", "pass"], ["pass"]])


def test_spearman_by_hand_and_with_ties():
    # no ties: d = (-1, 1, -1, 1, 0), rho = 1 - 6 * 4 / (5 * 24) = 0.8
    assert quality.spearman([1, 2, 3, 4, 5], [2, 1, 4, 3, 5])["rho"] == pytest.approx(0.8)
    # ties take mean ranks: y ranks (1, 2, 3.5, 5, 3.5); Pearson of ranks = 8 / sqrt(10 * 9.5)
    assert quality.spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7])["rho"] == pytest.approx(8 / np.sqrt(95))
    with pytest.raises(ValueError, match="at least 3"):
        quality.spearman([1, 2], [2, 1])


def test_ledger_reconciles_and_refuses_rows_that_do_not():
    ledger = quality.Ledger()
    ledger.add("q1", "CR", {"rules": "pass"}, None)
    ledger.add("q2", "CR", {"rules": "no question"}, "no question")
    ledger.add("q3", "TSA", {"rules": "pass"}, "duplicate question")
    s = ledger.summary()
    assert (
        s["generated"] == 3
        and s["kept"] == 1
        and s["rejected"] == {"duplicate question": 1, "no question": 1}
    )
    assert s["per_task"]["CR"] == {"generated": 2, "kept": 1, "rejected": {"no question": 1}}
    assert ledger.kept() == ["q1"] and json.loads(ledger.jsonl().splitlines()[1])["reason"] == "no question"
    ledger.rows[0]["status"] = "lost"  # neither kept nor rejected
    with pytest.raises(AssertionError, match="does not reconcile"):
        ledger.summary()


def test_audit_sample_per_batch_and_its_export(tmp_path):
    rows = [{"batch": "a" if i < 7 else "b", "id": i, "options": {"A": "x"}} for i in range(10)]
    sample = quality.audit_sample(rows, 0.15, seed=3)
    assert [r["batch"] for r in sample].count("a") == 2 and [r["batch"] for r in sample].count(
        "b"
    ) == 1  # ceil
    assert sample == quality.audit_sample(rows, 0.15, seed=3) and quality.audit_sample(rows, 0.0, 3) == []
    jsonl, table = quality.write_audit(sample, tmp_path)
    back = list(csv.DictReader(table.open()))
    assert len(back) == 3 and back[0]["label"] == "" and json.loads(back[0]["options"]) == {"A": "x"}
    assert json.loads(jsonl.read_text().splitlines()[0])["rating"] == ""
    with pytest.raises(ValueError, match="within"):
        quality.audit_sample(rows, 1.5, 0)


def test_agreement_command_and_the_batch_rule(tmp_path, capsys):
    path = tmp_path / "audited.csv"
    rows = [
        ("a", "pass", "pass", "pass", 5, 4),
        ("a", "pass", "reject", "reject", 4, 5),
        ("a", "pass", "pass", "pass", 3, 3),
        ("b", "reject", "reject", "reject", 1, 1),
        ("b", "pass", "pass", "pass", 2, 2),
    ]
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["batch", "r1", "r2", "label", "human", "metric"])
        w.writerows(rows)
    assert cavpref_main(["build", "agreement", "--audit", str(path), "--columns", "human", "metric"]) == 0
    out = json.loads(capsys.readouterr().out)
    # ranks (5,4,3,1,2) vs (4,5,3,1,2): d = (1,-1,0,0,0), rho = 1 - 6 * 2 / (5 * 24) = 0.9
    assert out["spearman"]["rho"] == pytest.approx(0.9) and out["rated"] == 5
    argv = [
        "build",
        "agreement",
        "--audit",
        str(path),
        "--columns",
        "r1",
        "r2",
        "label",
        "--measure",
        "fleiss",
    ]
    assert cavpref_main([*argv, "--batch_column", "batch", "--error_column", "label"]) == 0
    out = json.loads(capsys.readouterr().out)
    expected = quality.fleiss_kappa([list(r[1:4]) for r in rows])
    assert out["fleiss_kappa"] == pytest.approx(expected)
    assert out["batches"] == {
        "a": {"audited": 3, "errors": 1, "rate": pytest.approx(1 / 3), "dropped": True},
        "b": {"audited": 2, "errors": 1, "rate": 0.5, "dropped": True},
    }
    assert cavpref_main(["build", "agreement", "--audit", str(path), "--columns", "nope", "r1"]) == 2
    assert "no column(s) ['nope']" in capsys.readouterr().err


def test_window_volume_and_transition_maths():
    power = [0.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    assert media.best_window(power, 6.0, 2.0) == (2.0, 4.0)
    assert media.best_window(power, 6.0, 2.0, room_after=3.0) == (1.0, 3.0)  # must end by 3 s
    assert media.best_window(power, 6.0, 10.0) == (0.0, 6.0) and media.best_window(None, 6.0, 2.0) == (
        0.0,
        2.0,
    )
    with pytest.raises(ValueError, match="no room"):
        media.best_window(power, 6.0, 2.0, room_after=6.0)
    assert (
        media.mean_volume_db([0.01, 0.01]) == pytest.approx(-20.0) and media.mean_volume_db([0.0]) == -np.inf
    )
    assert media.transitions([1.0, 40.0, 2.0, 35.0], 30.0) == 2 and media.transitions(None, 30.0) == 0


def test_scan_measures_a_real_file(tmp_path):
    """3 s: seconds 0-1 grey, 2 black (a cut at 2 s); a tone at amplitude 0.5 in second 1 only."""
    frames = np.concatenate([np.full((16, 32, 32, 3), 200, np.uint8), np.zeros((8, 32, 32, 3), np.uint8)])
    audio = np.zeros(3 * 16000, np.float32)
    audio[16000:32000] = 0.5 * np.sin(2 * np.pi * 440 * np.arange(16000) / 16000)
    write_mp4(tmp_path / "v.mp4", frames, 8, audio, 16000)
    s = media.scan("v.mp4", tmp_path, frames=True, fps=1.0)
    assert s.has_video and s.has_audio and s.duration == pytest.approx(3.0, abs=0.05)
    assert s.power[1] == pytest.approx(0.125, rel=0.05) and s.power[0] < 1e-4  # mean square of a 0.5 sine
    assert len(s.diffs) == 2 and s.diffs[0] < 3 and s.diffs[1] > 150 and media.transitions(s.diffs, 30) == 1
    assert media.best_window(s.power, s.duration, 1.0) == (1.0, 2.0)
    assert s.signature.count("-") == 2 and media.scan("v.mp4", tmp_path, frames=False).diffs is None


def test_videos_are_found_and_named_without_collisions(tmp_path):
    for name in ("b.mp4", "a/c.MOV", "a_c.mp4", ".hidden.mp4", "notes.txt", ".cache/x.mp4"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(b"x")
    found = media.find_videos(tmp_path)
    assert found == ["a/c.MOV", "a_c.mp4", "b.mp4"]
    ids = media.video_ids(found)
    assert ids["b.mp4"] == "b" and ids["a/c.MOV"] != ids["a_c.mp4"] and ids["a_c.mp4"].startswith("a_c-")


def test_stages_resume_count_failures_and_redo_changed_inputs(tmp_path):
    stages = Stages(tmp_path)
    calls = []

    def work(unit):
        calls.append(unit.id)
        if unit.payload == "bad":
            raise StepFailed("HTTP 500", "server down")
        return unit.payload.upper()

    units = [Unit("u1", key_of(1), "a"), Unit("u2", key_of(2), "bad"), Unit("u3", key_of(3), "c")]
    assert stages.run("s", units, work) == {"u1": "A", "u3": "C"}
    assert (
        stages.stats["s"]["failed"] == {"HTTP 500": 1} and "server down" in stages.stats["s"]["errors"]["u2"]
    )
    calls.clear()
    units[1] = Unit("u2", key_of(2), "b")
    units[2] = Unit("u3", key_of("changed"), "c")
    assert stages.run("s", units, work) == {"u1": "A", "u2": "B", "u3": "C"}
    assert calls == ["u2", "u3"] and stages.stats["s"]["reused"] == 1  # u1 from disk, u3's input changed


def test_the_build_folder_is_checked(tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    with pytest.raises(BuildError, match="lies inside the --videos folder"):
        prepare_out(videos / "out", videos, "aura", {})
    with pytest.raises(BuildError, match="contains the --videos folder"):
        prepare_out(tmp_path, videos, "aura", {})
    other = tmp_path / "other"
    other.mkdir()
    (other / "thesis.tex").write_text("mine")
    with pytest.raises(BuildError, match="not empty .* not created by `cavpref build aura`"):
        prepare_out(other, videos, "aura", {})
    out = prepare_out(tmp_path / "new", videos, "aura", {"k": 1})
    assert prepare_out(out, videos, "aura", {"k": 2}) == out  # an earlier build of the same kind resumes
    release_output_dir(out), release_output_dir(out)  # (a build releases its claim when it ends)
    with pytest.raises(
        BuildError, match="not created by `cavpref build traceav` .written by `cavpref build aura`"
    ):
        prepare_out(out, videos, "traceav", {})
    assert (other / "thesis.tex").read_text() == "mine"


def test_a_missing_role_is_one_line_before_anything_is_written(tmp_path, capsys):
    (tmp_path / "videos").mkdir()
    argv = [
        "build",
        "traceav",
        "--videos",
        str(tmp_path / "videos"),
        "--out",
        str(tmp_path / "out"),
        "--visual_model",
        "vl",
    ]
    assert cavpref_main(argv) == 2
    err = capsys.readouterr().err
    assert (
        "set --fusion_model --generator_model --verifier_model --blindfold_model" in err
        and "Traceback" not in err
    )
    assert not (tmp_path / "out").exists()


def test_build_settings_never_hold_url_credentials():
    from cavpref.data_prep.builders.aura.config import AuraConfig, AuraEndpoints
    from cavpref.data_prep.builders.work import public_settings

    ep = AuraEndpoints(
        base_url="http://me:s3cret@host:8000/v1?api_key=abc", generator_base_url="https://x.org/v1#k"
    )
    settings = public_settings(AuraConfig(videos="v", out="o"), ep)
    assert (
        settings["base_url"] == "http://host:8000/v1" and settings["generator_base_url"] == "https://x.org/v1"
    )
    assert "s3cret" not in json.dumps(settings) and settings["tasks"] == [
        "CR",
        "UANS",
        "TPR",
        "TSA",
        "ID",
        "PSP",
    ]
