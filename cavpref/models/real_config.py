"""Qwen2.5-Omni-7B's tokenizer ids, processor and widths, built offline (no download) from the published values.

The tiny builders (``cavpref.models.tiny``) give real architectures at toy sizes with their own token ids; that
proves the code path, not that the numbers a 7B run depends on come out right: the embedding rows (152,064), the
placeholder ids the model scatters encoder outputs into (audio 151646, image 151655, video 151656, ...), the
encoder widths, and how many video / audio tokens a real-size clip becomes under the recipe's budgets. These
builders reproduce exactly those facts from ``cavpref.models.published``:

- ``build_qwen_omni_tokenizer``: a byte-level BPE trained on local text (Qwen2's pre-tokenizer), padded with
  unreachable filler pieces to Qwen2.5's 151,643 BPE ids so every added token lands at its real id, and "user"
  at 872 (the config's ``user_token_id``). Text token counts are NOT the real ones (not the real merges).
- ``build_qwen_omni_processor``: ``Qwen2_5OmniProcessor`` with the checkpoint's preprocessor values (12.8 M
  pixels per frame and 300 s of audio, which the model I/O's media budgets then cap, as with the download).
- ``build_real_width_qwen_omni``: a random-init thinker with every published width (language model, vision and
  audio encoders) and vocabulary, at reduced depth, written with its processor as a normal HF folder.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import torch

from cavpref.models.published import (
    QWEN2_5_BPE_PIECES,
    QWEN2_5_OMNI_7B_PREPROCESSOR,
    QWEN2_5_OMNI_7B_THINKER,
    QWEN2_5_OMNI_ADDED_TOKENS,
)
from cavpref.models.tiny import QWEN_OMNI_CHAT_TEMPLATE
from cavpref.models.tokenizer import NAMED_SPECIAL

USER_TOKEN_ID = QWEN2_5_OMNI_7B_THINKER["user_token_id"]
FILLER = "<|cavpref_unused_{}|>"  # never produced: no merge leads to it


def build_qwen_omni_tokenizer(extra_corpus: Iterable[str] = (), trained_pieces: int = 2000):
    """A ``Qwen2Tokenizer`` whose added tokens have Qwen2.5-Omni's ids and whose length is the real 151,665.

    The BPE is trained on ``cavpref.models.tokenizer.default_corpus`` plus ``extra_corpus`` (at most
    ``trained_pieces`` pieces, deterministic); ids from there up to 151,642 are filler pieces no merge reaches,
    so tokenisation only ever yields trained pieces and the real special ids.
    """
    from tokenizers import AddedToken
    from transformers import Qwen2Tokenizer

    from cavpref.models.tokenizer import _merges, train_qwen2_bpe

    bpe = train_qwen2_bpe(extra_corpus, trained_pieces)
    vocab = bpe.get_vocab()
    if len(vocab) > QWEN2_5_BPE_PIECES:
        raise ValueError(f"trained_pieces={trained_pieces}: more than Qwen2.5's {QWEN2_5_BPE_PIECES} BPE ids")
    by_id = {i: t for t, i in vocab.items()}
    by_id.update({i: FILLER.format(i) for i in range(len(vocab), QWEN2_5_BPE_PIECES)})
    if (
        "user" in vocab
    ):  # the chat template's role word gets the id the config names (a swap: ids stay a bijection)
        old = vocab["user"]
        by_id[old], by_id[USER_TOKEN_ID] = by_id[USER_TOKEN_ID], "user"
    full = {t: i for i, t in by_id.items()}
    full.update({t: i for i, t, _ in QWEN2_5_OMNI_ADDED_TOKENS})  # in the vocab at their ids: added in place
    tok = Qwen2Tokenizer(
        vocab=full,
        merges=_merges(bpe),
        unk_token=None,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        extra_special_tokens=dict(NAMED_SPECIAL),
        errors="replace",
    )
    tok.add_tokens([AddedToken(t, special=s, normalized=False) for _, t, s in QWEN2_5_OMNI_ADDED_TOKENS])
    wrong = [(t, i, tok.convert_tokens_to_ids(t)) for i, t, _ in QWEN2_5_OMNI_ADDED_TOKENS]
    wrong = [w for w in wrong if w[1] != w[2]]
    if wrong or len(tok) != QWEN2_5_OMNI_ADDED_TOKENS[-1][0] + 1:
        raise RuntimeError(f"added tokens off their published ids: {wrong[:3]} (len {len(tok)})")
    return tok


def build_qwen_omni_processor(
    out_dir: str | Path | None = None,
    *,
    tokenizer: Any = None,
    max_pixels: int | None = None,
    chunk_length: int | None = None,
):
    """``Qwen2_5OmniProcessor`` with the 7B checkpoint's preprocessor values (``max_pixels`` / ``chunk_length``
    override the checkpoint's 12,845,056 pixels and 300 s); saved to ``out_dir`` when given, so
    ``AutoProcessor.from_pretrained(out_dir)`` takes the same path as for the download."""
    from transformers import (
        Qwen2_5OmniProcessor,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
        WhisperFeatureExtractor,
    )

    pp = QWEN2_5_OMNI_7B_PREPROCESSOR
    vision = {
        "size": {"shortest_edge": pp["min_pixels"], "longest_edge": max_pixels or pp["max_pixels"]},
        "patch_size": pp["patch_size"],
        "temporal_patch_size": pp["temporal_patch_size"],
        "merge_size": pp["merge_size"],
        "image_mean": pp["image_mean"],
        "image_std": pp["image_std"],
    }
    processor = Qwen2_5OmniProcessor(
        image_processor=Qwen2VLImageProcessor(**copy.deepcopy(vision)),
        video_processor=Qwen2VLVideoProcessor(**copy.deepcopy(vision)),
        feature_extractor=WhisperFeatureExtractor(
            feature_size=pp["feature_size"],
            sampling_rate=pp["sampling_rate"],
            hop_length=pp["hop_length"],
            n_fft=pp["n_fft"],
            chunk_length=chunk_length or pp["chunk_length"],
            padding_value=pp["padding_value"],
            return_attention_mask=pp["return_attention_mask"],
        ),
        tokenizer=tokenizer if tokenizer is not None else build_qwen_omni_tokenizer(),
        chat_template=QWEN_OMNI_CHAT_TEMPLATE,
    )
    if out_dir is not None:
        processor.save_pretrained(str(out_dir))
    return processor


#: ``tiny_widths=True``: every width and head count divided down to test size (CPU tests of code written for the
#: real widths, e.g. ``scripts/gpu_check.py --width tiny``); vocabulary, token ids and the processor stay the 7B's.
TINY_WIDTHS: dict[str, dict[str, Any]] = {
    "text_config": {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [2, 3, 3]},
    },
    "vision_config": {"hidden_size": 32, "intermediate_size": 64, "num_heads": 2, "out_hidden_size": 64},
    "audio_config": {"d_model": 32, "encoder_attention_heads": 2, "encoder_ffn_dim": 64, "output_dim": 64},
}


def real_width_config(
    text_layers: int = 1, vision_depth: int = 1, audio_layers: int = 1, *, tiny_widths: bool = False
):
    """The published 7B thinker config with only the depths reduced (every width, head count, vocabulary and
    token id as published; the vision encoder's one full-attention block is its last). ``tiny_widths``: the
    widths of ``TINY_WIDTHS`` instead (same vocabulary and token ids)."""
    from transformers import Qwen2_5OmniThinkerConfig

    raw = copy.deepcopy(QWEN2_5_OMNI_7B_THINKER)
    if tiny_widths:
        for part, values in TINY_WIDTHS.items():
            raw[part].update(copy.deepcopy(values))
    raw["text_config"]["num_hidden_layers"] = text_layers
    raw["vision_config"]["depth"] = vision_depth
    raw["vision_config"]["fullatt_block_indexes"] = [
        i for i in raw["vision_config"]["fullatt_block_indexes"] if i < vision_depth
    ] or [vision_depth - 1]
    raw["audio_config"]["encoder_layers"] = audio_layers
    raw.pop("model_type")
    return Qwen2_5OmniThinkerConfig(**raw)


def build_real_width_qwen_omni(
    out_dir: str | Path,
    *,
    text_layers: int = 1,
    vision_depth: int = 1,
    audio_layers: int = 1,
    dtype: torch.dtype = torch.float32,
    extra_corpus: Iterable[str] = (),
    seed: int = 0,
    tiny_widths: bool = False,
    processor: Any = None,
) -> Path:
    """Write a random-init thinker at the 7B's widths (``real_width_config``) in ``dtype`` plus the published
    processor to ``out_dir``. One layer per stack is 1,418,524,344 parameters (the 152,064 x 3,584 embedding
    and the untied output head are 1,089,994,752 of them): 5.7 GB in float32. ``processor``: one
    ``build_qwen_omni_processor`` made before, saved as is (``extra_corpus`` is then unused; building and
    saving the 151,665-id tokenizer is the slow part of a small model's folder)."""
    from transformers import GenerationConfig, Qwen2_5OmniThinkerForConditionalGeneration

    out = Path(out_dir)
    tok = processor.tokenizer if processor is not None else build_qwen_omni_tokenizer(extra_corpus)
    config = real_width_config(text_layers, vision_depth, audio_layers, tiny_widths=tiny_widths)
    torch.manual_seed(seed)
    before = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # built in the target dtype: no float32 copy of 1.4 B parameters first
    try:
        model = Qwen2_5OmniThinkerForConditionalGeneration(config).eval()
    finally:
        torch.set_default_dtype(before)
    eos = [tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")]
    model.generation_config = GenerationConfig(
        eos_token_id=eos, pad_token_id=tok.pad_token_id, do_sample=False
    )
    model.save_pretrained(out)
    del model
    if processor is not None:
        processor.save_pretrained(str(out))
    else:
        build_qwen_omni_processor(out, tokenizer=tok)
    return out
