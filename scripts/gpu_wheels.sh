#!/usr/bin/env bash
# The Python packages scripts/gpu_check.py needs that the GPU machine's image lacks (or has too old), as wheels for
# its python3 (CPython 3.12, x86-64 Linux), downloaded into .whl/ (git-ignored) to be carried with the run and
# installed there without an index (cavpref_lab/bench/README.md, "The GPU check"):
#
#     bash scripts/gpu_wheels.sh [DEST]        # default DEST: .whl (about 54 MB)
#
# The image has torch 2.11, transformers 5.17, accelerate 1.15, huggingface_hub 1.33, tokenizers 0.23.2, pyarrow,
# pandas, fsspec, xxhash, httpx, click, hf-xet, ... but no trl, datasets or PyAV. Each pin and why:
#   transformers 5.25.0, trl 1.16.0, peft 0.21.2, accelerate 1.16.0   the versions pyproject pins (the suite's;
#                        the trainer uses private TRL / Trainer hooks); tests/lab/test_gpu_check.py checks they match
#   huggingface_hub 2.4.0  transformers 5.25 needs >= 2.4 (the image's is 1.33); it brings its new HTTP client:
#   httpx2 2.16.2, httpcore2 2.16.2, truststore 0.10.5, idna 3.20, h11 0.16.0   (httpx2 needs idna >= 3.18)
#   datasets 5.0.0       trl needs >= 4.7; 5.0 asks pyarrow >= 21 as trl does (5.2 asks >= 24, the image's is unknown)
#   dill 0.4.1, multiprocess 0.70.19   datasets' own needs the image lacks
#   av 18.1.0            PyAV: the real-processor row writes and decodes mp4 clips
# Checked on CPU: scripts/gpu_check.py at tiny widths passes every section with these packages over the image's
# transformers 5.17.0, accelerate 1.15.0, huggingface_hub 1.33.0, tokenizers 0.23.2 and pyarrow 21.0.0
# (cavpref_lab/bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.whl}
wheels=(transformers==5.25.0 trl==1.16.0 peft==0.21.2 accelerate==1.16.0
    huggingface_hub==2.4.0 httpx2==2.16.2 httpcore2==2.16.2 truststore==0.10.5 idna==3.20 h11==0.16.0
    datasets==5.0.0 dill==0.4.1 multiprocess==0.70.19 av==18.1.0)
python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$dest" "${wheels[@]}"
du -sh "$dest"
