#!/usr/bin/env bash
# The `laion_clap` CLAP backend in its own virtual environment: laion-clap pins numpy<2, which the main
# environment (numpy 2) must not be downgraded to. Usage, from the repository root:
#
#   scripts/laion_clap_env.sh [ENV_DIR]          # default ENV_DIR: .venv-laion-clap
#   ENV_DIR/bin/cavpref prep my.yaml             # with scoring_config: clap_backend: laion_clap
#
# It creates the venv, installs numpy<2 first (so the resolver keeps it), then laion-clap and this checkout
# editable with the laion_clap + dev extras, all from the package registry, and runs the backend's test
# (tests/data_prep/test_scoring_backends.py -k laion). The test builds a random HTSAT-tiny CLAP with laion_clap's
# "transformer" text tower and the CLIP BPE tokenizer the package ships: nothing is downloaded at run time.
#
# SYSTEM_SITE_PACKAGES=1 makes the venv see the base interpreter's packages (an installed torch /
# transformers is reused instead of downloaded again); numpy<2 installed inside the venv still shadows the
# base numpy 2. See docs/scoring.md "The laion_clap environment".
set -euo pipefail
ENV_DIR="${1:-.venv-laion-clap}"
PYTHON="${PYTHON:-python3}"
VENV_FLAGS=()
if [[ "${SYSTEM_SITE_PACKAGES:-0}" == "1" ]]; then
  VENV_FLAGS+=(--system-site-packages)
fi
"$PYTHON" -m venv "${VENV_FLAGS[@]}" "$ENV_DIR"
"$ENV_DIR/bin/python" -m pip install --upgrade pip
"$ENV_DIR/bin/python" -m pip install "numpy<2"
"$ENV_DIR/bin/python" -m pip install -e ".[laion_clap,dev]" "numpy<2"
# Versions without importing laion_clap: its import loads three hub tokenizers (see docs/scoring.md "Offline").
"$ENV_DIR/bin/python" -c "import numpy, torch, transformers; from importlib.metadata import version; \
print('laion_clap', version('laion_clap'), 'numpy', numpy.__version__, 'torch', torch.__version__, \
'transformers', transformers.__version__)"
OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" "$ENV_DIR/bin/python" -m pytest -q -p no:cacheprovider \
  tests/data_prep/test_scoring_backends.py -k laion -rs
