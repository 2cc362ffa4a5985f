""".ci/run: runs exactly the README's test command and fails loudly (non-zero status + a FAILED line)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "run"


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


# ---------------------------------------------------------------------------------- .ci/install_browser
INSTALL = SCRIPT.with_name("install_browser")
TOOLS = ("bash", "awk", "dirname", "timeout", "id", "tail", "sed", "mktemp", "rm", "env", "sleep", "cat")


def machine(tmp_path: Path, apt_get: str | None, browser: bool = False) -> dict:
    """A PATH holding the shell tools the scripts use, a fake ``apt-get`` (its body) and, with ``browser``,
    fake ``chromium`` / ``chromedriver``: what the install step finds on a CI machine."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    fakes = {"apt-get": apt_get} if apt_get is not None else {}
    if browser:
        fakes |= {"chromium": "exit 0", "chromedriver": "exit 0"}
    for name, body in fakes.items():
        (bin_dir / name).write_text(f'#!/bin/sh\necho "$@" >> "{tmp_path}/{name}.calls"\n{body}\n')
        (bin_dir / name).chmod(0o755)
    return {"PATH": str(bin_dir), "HOME": str(tmp_path)}


def install(tmp_path: Path, env: dict, **extra) -> subprocess.CompletedProcess:
    return subprocess.run(
        [shutil.which("bash"), str(INSTALL)],
        env={**env, **extra},
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_install_browser_installs_chromium_with_apt_get(tmp_path):
    done = install(tmp_path, machine(tmp_path, "exit 0"))
    assert done.returncode == 0 and "ci: chromium installed" in done.stdout
    calls = (tmp_path / "apt-get.calls").read_text().split("\n")
    assert calls[:2] == ["update -qq", "install -y -qq chromium chromium-driver"]


def test_install_browser_does_nothing_when_chromium_is_there(tmp_path):
    done = install(tmp_path, machine(tmp_path, "exit 0", browser=True))
    assert done.returncode == 0 and "are installed" in done.stdout
    assert not (tmp_path / "apt-get.calls").exists()


def test_install_browser_is_never_fatal_and_bounded_in_time(tmp_path):
    import time

    env = machine(tmp_path, "echo 'E: Unable to locate package chromium' >&2; exit 100")
    failing = install(tmp_path, env)
    assert failing.returncode == 0 and "not installed (exit 100)" in failing.stdout
    assert "Unable to locate package" in failing.stdout
    (tmp_path / "bin" / "apt-get").write_text("#!/bin/sh\nsleep 30\n")  # a mirror that hangs
    start = time.monotonic()
    slow = install(tmp_path, env, CI_BROWSER_INSTALL_S="1")
    assert slow.returncode == 0 and "not installed (exit 124)" in slow.stdout
    assert time.monotonic() - start < 15
    (tmp_path / "bin" / "apt-get").unlink()  # not a Debian machine
    none = install(tmp_path, env)
    assert none.returncode == 0 and "no apt-get" in none.stdout


def test_ci_runs_the_tests_after_a_failed_browser_install(tmp_path):
    (tmp_path / ".ci").mkdir()
    shutil.copy(SCRIPT, tmp_path / ".ci" / "run")
    shutil.copy(INSTALL, tmp_path / ".ci" / "install_browser")
    (tmp_path / "README.md").write_text(readme("echo the-tests-ran"))
    env = machine(tmp_path, "exit 100")
    done = subprocess.run(
        [shutil.which("bash"), str(tmp_path / ".ci" / "run")],
        env=env,
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (
        "chromium not installed" in done.stdout
        and "the-tests-ran" in done.stdout
        and "ci: passed" in done.stdout
    )
