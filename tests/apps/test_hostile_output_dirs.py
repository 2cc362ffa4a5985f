"""Second hostile-input pass (issue 40, #1-#5): a user's folder is never overwritten or deleted. Every command
that writes claims its output folder through ``cavpref.output_dir``: a non-empty folder it did not create is
refused (unless ``overwrite_output_dir``), the input model's folder and a source checkout never, one run per
folder at a time, ``~`` / ``$VAR`` expanded or refused. The real command-line entry points."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from cavpref.apps.cli import main as cavpref_main
from cavpref.data_prep.build import PrepConfig, build
from cavpref.output_dir import LOCK, OutputDirError, claim_output_dir, release_output_dir, source_checkout

ROOT = Path(__file__).resolve().parents[2]


def users_folder(path: Path) -> Path:
    """A folder of the user's with the names prep / train / eval write (the files must survive)."""
    for rel in ("notes.txt", "parquet/mine.parquet", "jsonl/mine.jsonl", "benchmark/x.txt", "README.md"):
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(f"the user's {rel}")
    return path


def intact(path: Path) -> bool:
    return all(
        (path / rel).read_text() == f"the user's {rel}"
        for rel in ("notes.txt", "parquet/mine.parquet", "jsonl/mine.jsonl", "benchmark/x.txt", "README.md")
    )


def train_recipe(fx, path: Path, out, **overrides) -> Path:
    cfg = {
        "method": "dpo",
        "beta": 0.1,
        "train_dataset": str(fx["prefs"]),
        "media_root": str(fx["media"]),
        "output_dir": str(out),
        "per_device_train_batch_size": 4,
        "max_steps": 1,
        "save_strategy": "no",
        "use_cpu": True,
        "bf16": False,
        "activation_checkpointing": False,
        "report_to": "none",
        "disable_tqdm": True,
        "model_name_or_path": str(fx["model"]),
        "dtype": "float32",
        "num_frames": 2,
        **overrides,
    }
    path.write_text(yaml.safe_dump(cfg))
    return path


def refused(argv: list[str], capsys) -> str:
    """The command's error (raised, or printed with a non-zero exit); fails if the command went ahead."""
    try:
        code = cavpref_main(argv)
    except OutputDirError as err:
        return str(err)
    assert code != 0, f"{argv[:2]} went ahead"
    return capsys.readouterr().err


COMMANDS = {
    "prep": lambda w, fx, tmp, d: ["prep", "--world", str(w), "--output_dir", str(d), "--progress", "false"],
    "prep merge": lambda w, fx, tmp, d: ["prep", "merge", "--output_dir", str(d), "--shards", "s0", "s1"],
    "world": lambda w, fx, tmp, d: ["world", "--out", str(d), "--num_clips", "1"],
    "model": lambda w, fx, tmp, d: ["model", "tiny-qwen", "--out", str(d)],
    "model scorer": lambda w, fx, tmp, d: ["model", "tiny-clap", "--world", str(w), "--out", str(d)],
    "train": lambda w, fx, tmp, d: ["train", str(train_recipe(fx, tmp / "r.yaml", d))],
    "eval": lambda w, fx, tmp, d: (
        ["eval", "avtrustbench", "--model", str(fx["model"]), "--data", "x.jsonl"] + ["--output", str(d)]
    ),
    "quickstart": lambda w, fx, tmp, d: ["quickstart", "--preset", "small", "--out", str(d)],
    "data import": lambda w, fx, tmp, d: (
        ["data", "import", "--format", "trl", "--files", str(tmp / "x.jsonl"), "--output_dir", str(d)]
    ),
    "data export": lambda w, fx, tmp, d: (
        ["data", "export", "--format", "trl", "--data", str(fx["prefs"])]
        + ["--media_root", str(fx["media"]), "--output_dir", str(d)]
    ),
    "build aura": lambda w, fx, tmp, d: (
        ["build", "aura", "--videos", str(fx["media"]), "--out", str(d)]
        + ["--visual_model", "v", "--audio_model", "a", "--generator_model", "g"]
    ),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_writing_command_refuses_a_folder_it_did_not_create(command, world, fx, tmp_path, capsys):
    """#1: prep used to delete DIR/parquet, DIR/jsonl, DIR/benchmark of any folder it was pointed at, exit 0."""
    folder = users_folder(tmp_path / "mine")
    error = refused(COMMANDS[command](world, fx, tmp_path, folder), capsys)
    assert "was not created by `cavpref" in error and "--overwrite_output_dir true" in error
    assert intact(folder) and sorted(os.listdir(folder)) == [
        "README.md",
        "benchmark",
        "jsonl",
        "notes.txt",
        "parquet",
    ]


def test_prep_writes_into_its_own_folder_again_and_into_a_users_folder_only_when_asked(world, tmp_path):
    out = tmp_path / "built"
    assert build(PrepConfig(world=str(world), output_dir=str(out), progress=False, tasks=["MCIT"]))
    again = build(PrepConfig(world=str(world), output_dir=str(out), progress=False, tasks=["MCIT", "MAT"]))
    assert again["up_to_date"] is False and (out / "benchmark" / "MAT").is_dir()  # its own folder: rebuilt
    mine = users_folder(tmp_path / "mine")
    with pytest.raises(OutputDirError, match="not created by `cavpref prep`"):
        build(PrepConfig(world=str(world), output_dir=str(mine), progress=False, tasks=["MCIT"]))
    assert intact(mine)
    build(
        PrepConfig(
            world=str(world), output_dir=str(mine), progress=False, tasks=["MCIT"], overwrite_output_dir=True
        )
    )
    assert (mine / "notes.txt").read_text() == "the user's notes.txt"  # asked: prep's own folders replaced
    assert not (mine / "parquet" / "mine.parquet").exists() and (mine / "manifest.json").is_file()


def test_train_and_eval_never_write_into_the_input_models_folder(fx, tmp_path, capsys):
    """#2: output_dir equal to model_name_or_path replaced the base checkpoint's weights in place."""
    model = tmp_path / "base"
    shutil.copytree(fx["model"], model)
    weights = {p.name: p.read_bytes() for p in model.iterdir() if p.is_file()}
    for out in (model, model / "finetuned"):
        rec = train_recipe(fx, tmp_path / "r.yaml", out, model_name_or_path=str(model))
        error = refused(["train", str(rec), "--overwrite_output_dir", "true"], capsys)  # not even when asked
        assert "model_name_or_path folder" in error
    error = refused(
        ["eval", "avtrustbench", "--model", str(model), "--data", "x.jsonl", "--output", str(model / "eval")],
        capsys,
    )
    assert "lies inside the model folder" in error
    assert {p.name: p.read_bytes() for p in model.iterdir() if p.is_file()} == weights
    assert sorted(p.name for p in model.iterdir()) == sorted(weights)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_nothing_lands_in_a_source_checkout_unless_git_ignores_the_folder(fx, tmp_path, capsys):
    """#3: output_dir inside a checkout: its README.md became the trainer's model card, weights in the tree."""
    repo = tmp_path / "checkout"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (repo / "README.md").write_text("# my project\n")
    (repo / ".gitignore").write_text("/runs/\n")
    for out in (repo, repo / "models" / "mine"):
        rec = train_recipe(fx, tmp_path / "r.yaml", out)
        error = refused(["train", str(rec), "--overwrite_output_dir", "true"], capsys)
        assert "inside the source checkout" in error
    assert (repo / "README.md").read_text() == "# my project\n" and not (repo / "models").exists()
    assert source_checkout(repo / "runs" / "sft") is None  # git-ignored: fine
    assert source_checkout(tmp_path / "elsewhere") is None and source_checkout(ROOT / "runs" / "x") is None
    assert source_checkout(ROOT / "cavpref" / "x") == ROOT


def test_a_second_run_into_a_folder_in_use_fails_fast(fx, tmp_path, capsys):
    """#4: two trainings into one output_dir both exited 0, logs / config / model interleaved."""
    out = tmp_path / "run"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; from cavpref.output_dir import claim_output_dir; "
                f"claim_output_dir({str(out)!r}, 'train'); print('held', flush=True); time.sleep(120)"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        start = time.monotonic()
        error = refused(["train", str(train_recipe(fx, tmp_path / "r.yaml", out))], capsys)
        assert f"in use by `cavpref train` (pid {holder.pid})" in error
        assert time.monotonic() - start < 30  # at once, before any model is loaded
        assert sorted(os.listdir(out)) == sorted([".cavpref_output.json", LOCK])  # nothing written
    finally:
        holder.kill()
        holder.wait()
    claim_output_dir(out, "train")  # the kernel dropped the killed holder's lock: no stale lock
    release_output_dir(out)


def test_a_released_folder_is_free_again_while_forked_workers_live(tmp_path):
    """The quickstart's training forks DataLoader workers: the lock must not live on in them."""
    out = tmp_path / "run"
    claim_output_dir(out, "train")
    child = os.fork()
    if child == 0:  # a forked worker that outlives the command
        time.sleep(60)
        os._exit(0)
    try:
        release_output_dir(out)
        code = f"from cavpref.output_dir import claim_output_dir; claim_output_dir({str(out)!r}, 'train')"
        other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
        assert other.returncode == 0, other.stderr
    finally:
        os.kill(child, 9)
        os.waitpid(child, 0)


def test_home_and_variables_are_expanded_or_refused(world, tmp_path, monkeypatch, fx, capsys):
    """#5: `output_dir: $HOME/...` created a folder literally named `$HOME`."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    stats = build(PrepConfig(world=str(world), output_dir="$HOME/prepped", progress=False, tasks=["MCIT"]))
    assert stats["up_to_date"] is False and (tmp_path / "home" / "prepped" / "manifest.json").is_file()
    monkeypatch.delenv("CAVPREF_NO_SUCH_VAR", raising=False)
    rec = train_recipe(fx, tmp_path / "r.yaml", "${CAVPREF_NO_SUCH_VAR}/run")
    assert "$CAVPREF_NO_SUCH_VAR is not set" in refused(["train", str(rec)], capsys)
    assert sorted(os.listdir(tmp_path)) == ["home", "r.yaml"]  # no folder named `$HOME` or `${…}`
