"""cavpref/cpu.py: which variables a command starts with and what a recipe's ``cpu_isa`` does to them (the bits
themselves: tests/trainer/test_train_determinism.py)."""

import platform

import pytest

from cavpref import cpu

VARS = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_CBWR")
pytestmark = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86-64 only")


@pytest.fixture
def shell(monkeypatch):
    for var in VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(cpu, "_DEFAULTED", set())
    return monkeypatch


def test_default_sets_what_the_shell_did_not_and_native_removes_only_that(shell):
    import os

    shell.setenv("MKL_CBWR", "COMPATIBLE")  # the shell's own choice stays
    cpu.default_cpu_isa()
    assert os.environ["ATEN_CPU_CAPABILITY"] == "avx2" and os.environ["ONEDNN_MAX_CPU_ISA"] == "AVX2"
    assert os.environ["MKL_CBWR"] == "COMPATIBLE"
    cpu.pin_cpu_isa("native")
    assert "ATEN_CPU_CAPABILITY" not in os.environ and "ONEDNN_MAX_CPU_ISA" not in os.environ
    assert os.environ["MKL_CBWR"] == "COMPATIBLE"


def test_avx2_overrides_the_shell_and_unknown_values_fail(shell):
    import os

    shell.setenv("ATEN_CPU_CAPABILITY", "avx512")
    cpu.pin_cpu_isa("avx2")
    assert [os.environ[v] for v in VARS] == ["avx2", "AVX2", "AVX2"]
    with pytest.raises(ValueError, match="cpu_isa must be one of"):
        cpu.pin_cpu_isa("avx512")
