"""An imported SFT file (no rejected side) trains only with ``method: sft``; the import's message, the dataset
card and the default recipe's error say so (issue 57 item 7)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from huggingface_hub import DatasetCard

from cavpref.data_prep.formats.cli import main as data_main
from cavpref.media.write import write_mp4

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def imported(tmp_path_factory, one_thread):
    root = tmp_path_factory.mktemp("sft")
    for k in range(2):
        frames = np.full((4, 16, 16, 3), 60 * k, np.uint8)
        write_mp4(root / f"c{k}.mp4", frames, fps=4, audio=np.zeros(16000, np.float32))
    rows = [{"messages": [{"role": "user", "content": "<video>What is shown?"},
                          {"role": "assistant", "content": f"A square of shade {k}."}], "videos": [f"c{k}.mp4"]}
            for k in range(2)]  # fmt: skip
    (root / "sft.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


def test_the_import_message_and_the_card_say_sft_rows_train_only_with_method_sft(imported, capsys):
    argv = [
        "import",
        "--format",
        "swift",
        "--files",
        str(imported / "sft.jsonl"),
        "--output_dir",
        str(imported / "o"),
    ]
    assert data_main(argv) == 0
    out = capsys.readouterr().out
    assert "all rows are SFT rows (no rejected answer): they train only with `method: sft`" in out
    card = DatasetCard.load(imported / "o" / "README.md").text
    assert "All rows are SFT rows (no rejected answer): they train only with `method: sft`" in card


def test_the_default_recipe_refuses_them_naming_method_sft(imported, tmp_path, capsys):
    from cavpref.models.tiny import build_tiny_qwen_omni
    from cavpref.train import main as train_main

    if not (imported / "o").is_dir():
        assert data_main(["import", "--format", "swift", "--files", str(imported / "sft.jsonl"),
                          "--output_dir", str(imported / "o")]) == 0  # fmt: skip
    build_tiny_qwen_omni(tmp_path / "model", hidden_size=32, num_hidden_layers=1, seed=0)
    rc = train_main([str(ROOT / "recipes" / "tiny" / "cavpref.yaml"), "--model_name_or_path", str(tmp_path / "model"),
                     "--train_dataset", str(imported / "o" / "preferences"), "--media_root", str(imported),
                     "--output_dir", str(tmp_path / "run"), "--max_steps", "1", "--beta_y", "0.1", "--beta_v", "0.1",
                     "--beta_a", "0.1"])  # fmt: skip
    err = capsys.readouterr().err
    assert rc != 0 and "2 row(s) have no rejected answer" in err and "train only with `method: sft`" in err, (
        err
    )
