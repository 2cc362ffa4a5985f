"""The tiny models load without warnings that read as errors (issue 54 #14): the Trainer's PAD/BOS/EOS
"alignment" warning on every load of the thinker, and transformers' "must be within the vocabulary" warnings
for the full model's talker ids. Checked on the configs the warnings are computed from."""

from __future__ import annotations

import logging

import pytest
from transformers import AutoProcessor, Qwen2_5OmniConfig, Qwen2_5OmniThinkerForConditionalGeneration

from cavpref.models.tiny import build_tiny_qwen_omni, build_tiny_qwen_omni_full


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


def test_every_talker_token_id_lies_in_the_vocabulary_transformers_checks_it_against(thinker, tmp_path):
    full = build_tiny_qwen_omni_full(tmp_path / "full", thinker=thinker)
    talker = Qwen2_5OmniConfig.from_pretrained(full).talker_config
    out_of_range = {
        name: getattr(talker, name)
        for name in talker.to_dict()
        if name.endswith("_token_id")
        and isinstance(getattr(talker, name), int)
        and not 0 <= getattr(talker, name) < talker.vocab_size
    }
    assert not out_of_range, (talker.vocab_size, out_of_range)
