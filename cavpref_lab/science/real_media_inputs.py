"""Inputs for ``cavpref check`` on real-size media: clips, preference rows and the 7B's processor, all offline.

``cavpref check`` counts tokens per row by collating rows through the recipe's model I/O; what it prints is only
as real as the clips and the processor. This writes the tests' preference rows (every task, its anchors) over
three clips of ``--height`` x ``--width`` pixels with ``--seconds`` of audio, and the Qwen2.5-Omni-7B processor
built from its published values (``cavpref.models.real_config``: real special-token ids, 12.8 M pixels per
frame and 300 s audio as in the checkpoint, capped by the recipe's budgets). Then:

    OMP_NUM_THREADS=1 python scripts/real_media_inputs.py --out /tmp/real640 --height 360 --width 640 --seconds 10
    cavpref check recipes/qwen2.5-omni-7b/lora_cavpref.yaml --accelerate_config recipes/accelerate/multi_gpu.yaml \\
      --train_dataset /tmp/real640/prefs --media_root /tmp/real640/media --processor_path /tmp/real640/processor
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from cavpref.bench.rows import examples, write_clips
from cavpref.parsing import parse_args


@dataclass
class InputsArguments:
    """Where and how large."""

    out: str = field(metadata={"help": "folder for media/, prefs/ and processor/"})
    height: int = field(default=360, metadata={"help": "clip height in pixels (even)"})
    width: int = field(default=640, metadata={"help": "clip width in pixels (even)"})
    seconds: float = field(default=10.0, metadata={"help": "clip length in seconds (audio and video)"})


def main(argv: list[str] | None = None) -> int:
    from datasets import Dataset

    from cavpref.models.real_config import build_qwen_omni_processor

    (args,) = parse_args([InputsArguments], sys.argv[1:] if argv is None else argv, prog="real_media_inputs")
    out = Path(args.out)
    write_clips(out / "media", args.height, args.width, args.seconds)
    if not (out / "prefs" / "dataset_info.json").exists():
        Dataset.from_list([e.to_row() for e in examples(1)]).save_to_disk(str(out / "prefs"))
    build_qwen_omni_processor(out / "processor")
    print(
        f"media {out / 'media'} ({args.height}x{args.width}, {args.seconds:g} s), prefs {out / 'prefs'}, "
        f"processor {out / 'processor'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
