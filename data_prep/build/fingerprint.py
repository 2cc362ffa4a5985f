"""What makes a build's outputs up to date: a fingerprint of the config, the input bytes and the code.

The manifest of a finished build holds it; an identical second run finds it and does nothing, and a
changed config key, input file or source file of this stage makes the outputs stale.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import platform
from pathlib import Path
from typing import Any

import datasets
import transformers

import cavpref
from cavpref.data_prep.build.config import PrepConfig
from cavpref.data_prep.integrity import file_sha256

BUILD_VERSION = 1
# where / how fast / how patiently, not what
_NOT_FINGERPRINTED = (
    "output_dir",
    "overwrite_output_dir",
    "num_proc",
    "force",
    "progress",
    "llm_timeout_s",
    "llm_max_retries",
)


def input_files(config: PrepConfig) -> list[str]:
    files = [*config.music_avqa, *config.avqa, *config.audioset, *config.custom]
    files += [
        f
        for f in (
            config.audioset_labels,
            config.audioset_ontology,
            config.tables_override,
            config.scoring_config,
        )
        if f
    ]
    return files


def code_files() -> list[Path]:
    """The source of this stage that shapes its outputs: build, tables, records, tasks (the generators and
    the task files, ``tasks/*.yaml``: templates and abstention sentences are written into the rows), readers,
    scoring."""
    root = Path(__file__).parents[1]  # the data_prep folder
    return sorted(
        [
            *root.glob("build/*.py"),
            root / "tables.py",
            root / "records.py",
            *root.glob("tasks/*.py"),
            *root.glob("tasks/*.yaml"),
            *root.glob("readers/*.py"),
            *root.glob("scoring/*.py"),
        ]
    )


def code_sha256() -> str:
    """The hash of :func:`code_files`: changed code, or a changed task file, means stale outputs."""
    h = hashlib.sha256()
    for f in code_files():
        if f.exists():
            h.update(f"{f.parent.name}/{f.name}".encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def fingerprint(config: PrepConfig) -> tuple[str, dict[str, Any]]:
    """(hex digest, what it covers): config (minus output-only keys), input file hashes, code hash."""
    cfg = {k: v for k, v in dataclasses.asdict(config).items() if k not in _NOT_FINGERPRINTED}
    inputs = {str(Path(f)): file_sha256(f) for f in input_files(config)}
    basis = {"build_version": BUILD_VERSION, "config": cfg, "inputs": inputs, "code": code_sha256()}
    digest = hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()
    return digest, basis


def versions() -> dict[str, str]:
    """The library versions a manifest records (not fingerprinted: they do not change the outputs)."""
    return {
        "python": platform.python_version(),
        "cavpref": getattr(cavpref, "__version__", "?"),
        "datasets": datasets.__version__,
        "transformers": transformers.__version__,
    }
