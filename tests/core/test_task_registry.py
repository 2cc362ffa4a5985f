"""``cavpref.task_registry``: the built-in tasks are derived from the task files ``data_prep/tasks/*.yaml``
(read as data: the core never imports data_prep), in the order of their ``order`` keys, and equal the
table the core held before the files existed (issue 52, part 3)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cavpref import task_registry
from cavpref.task_registry import TaskInfo, load_builtin_tasks

ROOT = Path(__file__).resolve().parents[2]
_ADV, _COMP, _MOD = "Adversarial attack", "Compositional reasoning", "Modality-specific dependency"
# The table as cavpref/task_registry.py wrote it by hand until bca38a4: order and content must not move (task ids,
# tables, reports and the generation loop follow it).
TODAY = (
    TaskInfo("MCIT", _ADV, True, (0, 0)),
    TaskInfo("ICIT", _ADV, True, (0, 0)),
    TaskInfo("MVIT", _ADV, True, (1, 0)),
    TaskInfo("MAIT", _ADV, True, (0, 1)),
    TaskInfo("COT-Stitch", _COMP, False, (0, 0)),
    TaskInfo("COT-Swap", _COMP, True, (1, 0), released_switches=(1, 1)),
    TaskInfo("CAT", _COMP, False, (0, 0)),
    TaskInfo("MVT", _MOD, True, (1, 0)),
    TaskInfo("MAT", _MOD, True, (0, 1)),
    TaskInfo("CLEAN", "Reference", False, (0, 0)),
)


def test_the_derived_builtin_tasks_are_todays_table_in_order():
    assert task_registry.BUILTIN_TASKS == TODAY
    assert [t.to_dict() for t in task_registry.BUILTIN_TASKS] == [t.to_dict() for t in TODAY]
    assert task_registry.task_names()[: len(TODAY)] == tuple(t.name for t in TODAY)


def test_the_task_files_are_the_checkouts_and_the_core_reads_them_without_importing_data_prep():
    assert task_registry.builtin_task_folder() == ROOT / "data_prep" / "tasks"
    code = (
        "import sys; from cavpref import task_registry as r; "
        "print(len(r.BUILTIN_TASKS), any(m.startswith('cavpref.data_prep') for m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT.parent
    )
    assert out.stdout.split() == ["10", "False"]


@pytest.fixture
def task_files(tmp_path):
    """A copy of the built-in task files, to edit."""
    for f in task_registry.builtin_task_folder().glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    return tmp_path


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def test_the_builtin_tasks_follow_the_files_order_keys_and_facts(task_files):
    assert load_builtin_tasks(task_files) == TODAY
    edit(task_files / "mcit.yaml", "order: 1 ", "order: 11 ")  # MCIT last, after CLEAN
    edit(task_files / "mat.yaml", "switches: [0, 1]", "switches: [1, 1]")
    tasks = load_builtin_tasks(task_files)
    assert [t.name for t in tasks] == [t.name for t in TODAY[1:]] + ["MCIT"]
    assert next(t for t in tasks if t.name == "MAT").switches == (1, 1)


@pytest.mark.parametrize(
    ("file", "old", "new", "message"),
    [
        ("mat.yaml", "order: 9 ", "order: 8 ", r"mvt.yaml: order 8 is also .*mat.yaml's"),
        ("mat.yaml", "name: 'MAT'", "name: 'MVT'", r"mvt.yaml: name 'MVT' is also .*mat.yaml's"),
        ("mat.yaml", "order: 9 ", "rank: 9 ", r"mat.yaml: missing key\(s\) \['order'\]"),
        ("mat.yaml", "order: 9 ", "order: nine ", r"mat.yaml: order must be an integer, got 'nine'"),
        ("mat.yaml", "abstains: true", "abstains: 'yes'", r"mat.yaml: abstains must be true or false"),
        ("mat.yaml", "dimension: 'Modality-specific dependency'", "dimension: 'Other'", r"mat.yaml: .*unknown dimension"),
        ("mat.yaml", "switches: [0, 1]", "switches: [0, 2]", r"mat.yaml: task MAT: switches must be"),
        ("cat.yaml", "templates:", "templates: [", r"cat.yaml: not a readable task file"),
    ],
)  # fmt: skip
def test_a_bad_task_file_is_a_one_line_error_naming_it(task_files, file, old, new, message):
    edit(task_files / file, old, new)
    with pytest.raises(ValueError, match=message) as err:
        load_builtin_tasks(task_files)
    assert "\n" not in str(err.value)


def test_a_folder_without_task_files_is_an_error(tmp_path):
    (tmp_path / "notes.txt").write_text("no task here")
    with pytest.raises(FileNotFoundError, match="no built-in task files"):
        load_builtin_tasks(tmp_path)
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(ValueError, match="list.yaml: a task file is a mapping of keys, got list"):
        load_builtin_tasks(tmp_path)


def test_an_installed_package_carries_the_task_files_and_reads_them(tmp_path):
    """setup.py's ``package_data`` ships ``tasks/*.yaml``: the core of a regular (not editable) install finds
    them inside the installed ``cavpref/data_prep/tasks`` and derives the same table."""
    lib = tmp_path / "lib"
    build = [
        sys.executable,
        "setup.py",
        "-q",
        "egg_info",
        "--egg-base",
        str(tmp_path),
        "build_py",
        "--build-lib",
        str(lib),
    ]
    subprocess.run(build, cwd=ROOT, capture_output=True, text=True, check=True)
    shipped = sorted(p.name for p in (lib / "cavpref" / "data_prep" / "tasks").glob("*.yaml"))
    assert shipped == sorted(p.name for p in (ROOT / "data_prep" / "tasks").glob("*.yaml"))
    code = "from cavpref import task_registry as r; print(r.builtin_task_folder()); print(*(t.name for t in r.BUILTIN_TASKS))"
    env = {"PATH": "", "PYTHONPATH": str(lib)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path, env=env
    )
    assert out.stdout.splitlines() == [
        str(lib / "cavpref" / "data_prep" / "tasks"),
        " ".join(t.name for t in TODAY),
    ]
