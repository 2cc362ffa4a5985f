""".ci/run: runs exactly the README's test command and fails loudly (non-zero status + a FAILED line)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / ".ci" / "run"


def run_ci(tmp_path: Path, readme: str) -> subprocess.CompletedProcess:
    (tmp_path / ".ci").mkdir()
    shutil.copy(SCRIPT, tmp_path / ".ci" / "run")
    (tmp_path / "README.md").write_text(readme)
    return subprocess.run(
        ["bash", str(tmp_path / ".ci" / "run")], check=False, capture_output=True, text=True, timeout=60
    )


def readme(command: str) -> str:
    return (
        "# x\n\n<!-- ci:main-command -->\n```bash\necho main\n```\n\n"
        f"<!-- ci:test-command -->\n```bash\n{command}\n```\n"
    )


def test_runs_the_readme_test_command_in_the_repo_root(tmp_path):
    done = run_ci(tmp_path, readme("test -f README.md && echo the-tests-ran"))
    assert done.returncode == 0, done.stderr
    assert "the-tests-ran" in done.stdout and "echo main" not in done.stdout and "ci: passed" in done.stdout


@pytest.mark.parametrize(
    "command, status", [("exit 3", 3), ("false | cat", 1), ("true && ls /nonexistent-dir", 2)]
)
def test_a_failing_command_fails_loudly(tmp_path, command, status):
    done = run_ci(tmp_path, readme(command))
    assert done.returncode == status
    assert f"ci: FAILED with exit status {status}" in done.stderr and "ci: passed" not in done.stdout


def test_a_readme_without_the_marker_fails(tmp_path):
    done = run_ci(tmp_path, "# no marker here\n")
    assert done.returncode == 1 and "no test command found" in done.stderr
