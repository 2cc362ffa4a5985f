#!/usr/bin/env bash
# Does cavpref still train with the newest TRL, transformers, PEFT and accelerate on PyPI?
#
#   scripts/compat_check.sh [VENV_DIR] [-- PYTEST_ARGS...]
#
# pyproject.toml pins those four to the minor releases the suite was run with (docs/training.md, "Versions");
# the trainer leans on a few private hooks of TRL / Trainer, which change between minor releases. This script
# builds a fresh virtual environment (no system site packages; VENV_DIR, default a temporary folder removed at the
# end), installs torch as CI does, the newest releases of the four libraries (ignoring the pins: cavpref itself goes
# in with --no-deps, its other dependencies as pyproject.toml says), runs the trainer / model / launch tests, and
# prints the versions and what broke. Exit status: pytest's. Costs a few GB of disk and several minutes.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-}"
[ "$#" -gt 0 ] && shift
[ "${1:-}" = "--" ] && shift
cleanup=""
if [ -z "$venv" ]; then
    cleanup="$(mktemp -d)"
    venv="$cleanup/venv"
    trap 'rm -rf "$cleanup"' EXIT
fi
NEWEST=(trl transformers peft accelerate)

python3 -m venv "$venv"  # no --system-site-packages: only what is installed below
# shellcheck disable=SC1091
. "$venv/bin/activate"
pip install -q --upgrade pip
pip install -q torch==2.14.1 torchvision==0.29.1
# cavpref's other dependencies as pyproject.toml lists them, the four under test at their newest release
others="$(python - "$root/pyproject.toml" "${NEWEST[@]}" <<'EOF'
import re, sys, tomllib

project = tomllib.load(open(sys.argv[1], "rb"))["project"]
skip = set(sys.argv[2:]) | {"torch", "torchvision"}
deps = project["dependencies"] + [d for d in project["optional-dependencies"]["dev"] if d.startswith("pytest")]
print("\n".join(d for d in deps if re.match(r"[A-Za-z0-9_.-]+", d).group(0).lower() not in skip))
EOF
)"
mapfile -t others <<<"$others"
pip install -q "${others[@]}"
pip install -q --upgrade "${NEWEST[@]}"
pip install -q --no-deps -e "$root"

echo "== versions"
python - "${NEWEST[@]}" torch <<'EOF'
import importlib.metadata as md, sys

for name in sys.argv[1:]:
    print(f"{name}=={md.version(name)}")
EOF

tests=("$@")
if [ "${#tests[@]}" -eq 0 ]; then
    tests=(
        tests/core/test_loss.py tests/trainer/test_trainer.py tests/trainer/test_trainer_audit.py tests/trainer/test_trainer_exact.py
        tests/trainer/test_trainer_launch.py tests/trainer/test_trainer_fsdp.py tests/trainer/test_trl_dpo.py tests/trainer/test_reference_cache.py
        tests/core/test_run_identity.py tests/core/test_recipes.py tests/models/test_models_adapters.py tests/models/test_models_peft.py
        tests/models/test_models_tiny.py tests/trainer/test_encoder_learning_rate.py
    )
fi
echo "== pytest ${tests[*]}"
cd "$root"
set +e
OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" python -m pytest -q -p no:cacheprovider -rfE "${tests[@]}"
status=$?
set -e
echo "== compat_check: pytest exit status $status ($([ "$status" -eq 0 ] && echo 'nothing broke' || echo 'see FAILED / ERROR above'))"
exit "$status"
