"""The tiny models load without warnings that read as errors (issue 54 #14): the Trainer's PAD/BOS/EOS
"alignment" warning on every load of the thinker. (The full model's token ids:
tests/models/test_tiny_full_omni_load.py.)"""

from __future__ import annotations

import logging

import pytest
from transformers import AutoProcessor, Qwen2_5OmniThinkerForConditionalGeneration

from cavpref.models.tiny import build_tiny_qwen_omni


@pytest.fixture(scope="module")
def thinker(tmp_path_factory):
    return build_tiny_qwen_omni(
        tmp_path_factory.mktemp("tiny") / "thinker", hidden_size=32, num_hidden_layers=1
    )


def test_the_trainer_finds_the_thinkers_special_tokens_aligned_with_its_tokenizer(thinker):
    from transformers.trainer_utils import align_special_tokens

    model = Qwen2_5OmniThinkerForConditionalGeneration.from_pretrained(thinker)
    said = []
    handler = logging.Handler()
    handler.emit = lambda record: said.append(record.getMessage())
    log = logging.getLogger("transformers.trainer_utils")
    log.addHandler(handler)
    try:
        align_special_tokens(model, AutoProcessor.from_pretrained(thinker))  # what Trainer.__init__ calls
    finally:
        log.removeHandler(handler)
    assert not [m for m in said if "PAD/BOS/EOS" in m], said
