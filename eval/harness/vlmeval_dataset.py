"""A VLMEvalKit dataset class for a TSV of ``cavpref eval export --harness vlmevalkit``: the media sent.

Copied by the export into its folder as ``cavpref_vlmeval.py`` (beside the TSV, ``items.jsonl`` and
``export.json``, which it reads). VLMEvalKit's own loader takes a custom TSV without an ``image`` column for
a text-only MCQ, so without this class the model would never see the video or hear the audio. ``build_prompt``
gives VLMEvalKit's message list in the layout of its audio-visual datasets (``vlmeval/dataset/worldsense.py``):
a ``video`` entry (the pass's video file), an ``audio`` entry (its sound as a WAV of its own), then the exact
cavpref prompt as one ``text`` entry; ``force_use_dataset_prompt`` keeps a model's own MCQ prompt (Qwen2-VL /
Qwen2.5-Omni's ``use_custom_prompt``) from replacing it. ``evaluate`` hands the prediction file back to
cavpref's scoring (every rotation, the paired trust score) and returns its headline numbers.

Registration: importing this module adds the class to ``vlmeval.dataset`` (``DATASET_CLASSES``, so
``build_dataset(<name>)`` finds it, and as an attribute, so a ``--config`` entry
``{"class": "CavprefAVDataset", "dataset": "<name>"}`` does). ``python cavpref_vlmeval.py <VLMEvalKit>/run.py
--model … --data <name>`` registers it and runs VLMEvalKit's ``run.py`` with the remaining arguments. Without
VLMEvalKit installed the class still loads the TSV and builds prompts (what cavpref's tests check).
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFIG = json.loads((HERE / "export.json").read_text(encoding="utf-8"))
DATASET_NAME = CONFIG["task"]

try:
    from vlmeval.dataset.image_base import ImageBaseDataset as _Base
except ImportError:  # VLMEvalKit absent: a stand-in that loads the TSV, so prompts can be built and checked

    class _Base:
        def __init__(self, dataset: str = DATASET_NAME, **_):
            self.dataset_name = dataset
            self.data = self.load_data(dataset)

        def __len__(self):
            return len(self.data)


def _cell(line, key: str) -> str:
    """A TSV cell as text: pandas reads an empty cell as NaN."""
    value = line.get(key) if hasattr(line, "get") else line[key]
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


class CavprefAVDataset(_Base):
    MODALITY = "IMAGE"  # VLMEvalKit's per-row inference loop: each row's build_prompt is sent as is
    TYPE = "MCQ"
    force_use_dataset_prompt = True  # the exact cavpref prompt, not the model's own MCQ template

    @classmethod
    def supported_datasets(cls):
        return [DATASET_NAME]

    def load_data(self, dataset):
        path = HERE / f"{DATASET_NAME}.tsv"
        try:
            import pandas as pd
        except ImportError:
            with open(path, encoding="utf-8", newline="") as fh:
                return list(csv.DictReader(fh, delimiter="\t"))
        return pd.read_csv(path, sep="\t", dtype={"id": str, "answer": str}, keep_default_na=False)

    def build_prompt(self, line):
        """The pass's messages: its video, its audio, then the cavpref prompt (VLMEvalKit's ``type`` /
        ``value`` entries)."""
        if isinstance(line, int):
            line = self.data.iloc[line] if hasattr(self.data, "iloc") else self.data[line]
        message = []
        if _cell(line, "video_path"):
            message.append({"type": "video", "value": _cell(line, "video_path")})
        if _cell(line, "audio_path"):
            message.append({"type": "audio", "value": _cell(line, "audio_path")})
        message.append({"type": "text", "value": _cell(line, "prompt")})
        return message

    @classmethod
    def evaluate(cls, eval_file, **judge_kwargs):
        """cavpref's scores of VLMEvalKit's prediction file (``<model>_<name>.xlsx``): the headline numbers
        (circular, vanilla, paired trust per setting, …); ``cavpref eval score --harness vlmevalkit`` on the
        same file writes the full report. No judge: VLMEvalKit's ``judge_kwargs`` are not used."""
        from cavpref.eval.harness.vlmevalkit import evaluate

        return evaluate(HERE, eval_file)


def register() -> None:
    """Make VLMEvalKit's ``build_dataset`` / ``run.py --config`` find the class (VLMEvalKit installed)."""
    import vlmeval.dataset as datasets

    datasets.CavprefAVDataset = CavprefAVDataset
    if CavprefAVDataset not in datasets.DATASET_CLASSES:
        datasets.DATASET_CLASSES.append(CavprefAVDataset)
    if DATASET_NAME not in datasets.SUPPORTED_DATASETS:
        datasets.SUPPORTED_DATASETS.append(DATASET_NAME)


try:
    register()
except ImportError:
    pass


if __name__ == "__main__":
    import runpy
    import sys

    if len(sys.argv) < 2 or not sys.argv[1].endswith(".py"):
        raise SystemExit(
            "usage: python cavpref_vlmeval.py <VLMEvalKit>/run.py --model M --data " + DATASET_NAME
        )
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
