"""write_mp4 gives the same file whatever the process's heap holds and whatever SIMD instructions the CPU has:
libx264's macroblock-tree rate control, which the preset turns on, read memory it never wrote and computed in
floating point through CPU-specific code; ``write.X264_OPTIONS`` switches it off (``mbtree=0``)."""

import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cavpref.media import write
from cavpref.media.write import write_mp4
from tests.helpers import ROOT
from tests.helpers.heap import FRAMES, libc, written

if not hasattr(libc, "mallopt"):
    pytest.skip("needs glibc (mallopt)", allow_module_level=True)


def test_the_file_does_not_depend_on_what_the_heap_held(tmp_path):
    fresh = tmp_path / "fresh.mp4"
    np.save(tmp_path / "frames.npy", FRAMES)
    code = (
        "import sys, numpy as np; from cavpref.media.write import write_mp4; "
        "write_mp4(sys.argv[2], np.load(sys.argv[1]), 8.0)"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "frames.npy"), str(fresh)], check=True)
    for byte in (0xFF, 0x00, 0xFF):  # 0xff runs read as NaN floats
        same = written(tmp_path / "x.mp4", byte) == fresh.read_bytes()
        assert same, f"heap left holding {byte:#x}: not the file a fresh process writes"


# libx264's instruction sets, named as its ``asm`` parameter takes them: SSE4.2 runs on every x86-64 CPU
SSE42 = "MMX2,SSE,SSE2,SSE2Fast,SSE3,SSSE3,SSE4.2"
x86 = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="libx264 asm names are x86's")


def _with_x264(monkeypatch, params):
    monkeypatch.setattr(write, "X264_OPTIONS", {**write.X264_OPTIONS, "x264-params": params})


@x86
def test_the_file_does_not_depend_on_the_cpu_instructions(tmp_path, monkeypatch):
    """The CPU's own best code (AVX-512 or AVX2 on the machines here) and SSE4.2-only code: the same file."""
    native = written(tmp_path / "native.mp4", 0x00)
    _with_x264(monkeypatch, write.X264_OPTIONS["x264-params"] + ":asm=" + SSE42)
    assert written(tmp_path / "sse.mp4", 0x00) == native


def test_with_mbtree_the_heap_did_change_the_file(tmp_path):
    """The fault ``mbtree=0`` is for is real here: with the preset's macroblock tree, 0xff left on the heap by a
    first encode's successor changes the file. Run in a fresh process, because whether the encoder's buffers land on
    the 0xff blocks depends on what the process allocated before (in the middle of the suite they may not: CI at
    stop 48); from a fresh start, one encode then the 0xff one reproduces it. Skipped, not failed, where this
    machine's allocator never hands the encoder those blocks: the control shows the fault, it is not the feature."""
    code = (
        "import sys; from pathlib import Path; from tests.helpers import heap as t; "
        "t.write.X264_OPTIONS = {**t.write.X264_OPTIONS, 'x264-params': 'mbtree=1'}; "
        "a = t.written(Path(sys.argv[1]) / 'a.mp4', 0x00); b = t.written(Path(sys.argv[1]) / 'b.mp4', 0xFF); "
        "print('changed' if a != b else 'same')"
    )
    run = subprocess.run(  # from the repository root: ``python -c`` imports ``tests.helpers`` from there
        [sys.executable, "-c", code, str(tmp_path)],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    if run.stdout.decode().strip() != "changed":
        pytest.skip("with mbtree=1 this machine's allocator did not hand the encoder the 0xff blocks")


@x86
def test_with_mbtree_the_cpu_did_change_the_file(tmp_path, monkeypatch):
    """With the preset's macroblock tree, SSE4.2 code instead of the CPU's own (AVX2 or AVX-512) changes the file;
    a CPU with neither runs the same code both ways, so there the control has nothing to show."""
    if not {"avx2", "avx512f"} & _cpu_flags():
        pytest.skip("the CPU has neither AVX2 nor AVX-512: its own code is the SSE4.2 code")
    _with_x264(monkeypatch, "mbtree=1")
    native = written(tmp_path / "a.mp4", 0x00)
    _with_x264(monkeypatch, "mbtree=1:asm=" + SSE42)
    if native == written(tmp_path / "c.mp4", 0x00):
        # seen on this workplace's CPUs (2026-12): x264 picks the same macroblock-tree decisions with its AVX2
        # and its SSE4.2 code for this tiny clip, so the control has nothing to show here either
        pytest.skip("this CPU's own x264 code and the SSE4.2 code write the same bytes with mbtree on")


def _cpu_flags():
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    return {
        flag
        for line in text.splitlines()
        if line.startswith("flags")
        for flag in line.split(":", 1)[1].split()
    }


def test_audio_bit_rate_sizes_the_audio_and_keeps_its_length(tmp_path):
    """The HTML report writes its audio clips at 24 kbit/s: 3 kB a second, a third of the encoder's default
    (about 70 kbit/s for 16 kHz mono), the same length."""
    from cavpref.media.probe import probe

    sr, seconds = 16000, 8
    t = np.arange(sr * seconds) / sr
    audio = 0.3 * np.sin(2 * np.pi * 440 * t) + 0.05 * np.random.default_rng(0).standard_normal(t.size)
    sizes = {}
    for rate in (24_000, None):
        path = tmp_path / f"a{rate}.m4a"
        write_mp4(path, None, 25.0, audio.astype(np.float32), sr, audio_bit_rate=rate)
        sizes[rate] = path.stat().st_size
        assert probe(path).duration == pytest.approx(seconds, abs=0.1) and not probe(path).has_video
    assert sizes[24_000] / seconds == pytest.approx(24_000 / 8, rel=0.2)  # bytes per second
    assert sizes[24_000] < sizes[None] / 2.5
