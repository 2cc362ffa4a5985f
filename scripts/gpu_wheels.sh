#!/usr/bin/env bash
# The Python packages scripts/gpu_check.py needs that the GPU machine's image lacks (or has too old), as wheels for
# its python3 (CPython 3.12, x86-64 Linux), downloaded into .whl/ (git-ignored) to be carried with the run and
# installed there without an index (docs/training.md, "The GPU check"):
#
#     bash scripts/gpu_wheels.sh [DEST]        # default DEST: .whl (about 52 MB)
#
# The image has torch 2.11, transformers 5.17, accelerate 1.15, huggingface_hub 1.33, tokenizers 0.23.2, pyarrow,
# pandas, fsspec, xxhash, ... but no trl, datasets or PyAV. Each pin and why:
#   transformers 5.24.0  the code needs >= 5.23 (5.22.2 and older have no Qwen2_5OmniProcessor.video_token_id);
#                        5.25 needs huggingface_hub >= 2.4, which the image lacks; 5.24 needs what the image has
#   trl 1.16.0           the trainer's base (pyproject's floor)
#   datasets 5.0.0       trl needs >= 4.7; 5.0 asks pyarrow >= 21 as trl does (5.2 asks >= 24, the image's is unknown)
#   dill 0.4.1, multiprocess 0.70.19   datasets' own needs the image lacks
#   peft 0.21.2          the version the test suite runs, so LoRA matches the carried transformers
#   av 18.1.0            PyAV: the real-processor row writes and decodes mp4 clips
# Checked on CPU: scripts/gpu_check.py at tiny widths passes every section with these wheels over the image's
# accelerate 1.15.0, huggingface_hub 1.33.0, tokenizers 0.23.2 and pyarrow 21.0.0 (docs/training.md).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.whl}
wheels=(transformers==5.24.0 trl==1.16.0 datasets==5.0.0 dill==0.4.1 multiprocess==0.70.19 peft==0.21.2 av==18.1.0)
python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$dest" "${wheels[@]}"
du -sh "$dest"
