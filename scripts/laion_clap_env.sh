#!/usr/bin/env bash
# The `laion_clap` CLAP backend in its own virtual environment: laion-clap pins numpy<2, which the main
# environment (numpy 2) must not be downgraded to. Usage, from the repository root:
#
#   scripts/laion_clap_env.sh [ENV_DIR]          # default ENV_DIR: .venv-laion-clap
#   ENV_DIR/bin/cavpref prep my.yaml             # with scoring_config: clap_backend: laion_clap
#
# It installs this checkout editable with the laion_clap extra (numpy<2 first, so the resolver keeps it),
# then runs the backend's test (tests/test_scoring_backends.py -k laion), which builds a random HTSAT-tiny
# CLAP_Module through the package's own constructor. laion_clap builds its text side from the hub id
# "roberta-base": fetch it into the HF cache once (with network) or the test skips saying so.
# See docs/scoring.md "The laion_clap environment".
set -euo pipefail
ENV_DIR="${1:-.venv-laion-clap}"
PYTHON="${PYTHON:-python3}"
"$PYTHON" -m venv "$ENV_DIR"
"$ENV_DIR/bin/pip" install --upgrade pip
"$ENV_DIR/bin/pip" install "numpy<2"
"$ENV_DIR/bin/pip" install -e ".[laion_clap,dev]" "numpy<2"
"$ENV_DIR/bin/python" -c "import laion_clap, numpy; print('laion_clap', getattr(laion_clap, '__version__', '?'), 'numpy', numpy.__version__)"
OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" "$ENV_DIR/bin/python" -m pytest -q tests/test_scoring_backends.py -k laion -rs
