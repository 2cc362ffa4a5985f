"""``cavpref model``: the same parser as every command (config file + overrides, keys in --help)."""

from __future__ import annotations

import json

import pytest

from cavpref.models.cli import main


def test_model_cli_help_lists_the_builder_keys(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["tiny-qwen", "--help"])
    out = capsys.readouterr().out
    assert stop.value.code == 0 and "cavpref model tiny-qwen" in out
    for key in ("--out", "--hidden_size", "--num_hidden_layers", "--corpus_file"):
        assert key in out, key


def test_model_cli_config_file_and_override(tmp_path, capsys):
    cfg = tmp_path / "tiny.yaml"
    cfg.write_text(f"out: {tmp_path / 'model'}\nhidden_size: 64\nnum_hidden_layers: 1\n")
    assert main(["tiny-qwen", "--config", str(cfg), "--hidden_size", "32"]) == 0
    config = json.loads((tmp_path / "model" / "config.json").read_text())
    assert config["text_config"]["hidden_size"] == 32 and config["text_config"]["num_hidden_layers"] == 1
    capsys.readouterr()
    assert main(["tiny-qwen", "--config", str(cfg), "--hiden_size", "32"]) == 2  # one line, no traceback
    assert "unknown key --hiden_size (did you mean --hidden_size?)" in capsys.readouterr().err
