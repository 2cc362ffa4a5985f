"""Tiny, randomly initialised, fully offline models written as normal HF folders.

Tests, the quickstart and the benchmarks need real architectures without downloads: ``build_tiny_qwen_omni``
writes a Qwen2.5-Omni thinker + ``Qwen2_5OmniProcessor`` folder, ``build_tiny_composed`` a composed AVLLM
(SigLIP frames + Whisper audio + any causal LM) with its processor, ``build_tiny_whisper`` a Whisper speech
recogniser (the benchmark builders' transcripts). All load with ``from_pretrained(folder)``
through the same code path as a hub checkpoint, and are byte-identical for the same arguments and seed.
``demo_media`` makes a deterministic DecodedMedia for tests and examples.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import torch

from cavpref.media.decode import DecodedMedia
from cavpref.models.tokenizer import train_tokenizer

# The Qwen2.5-Omni chat template format (system default, typed content items, one placeholder per stream).
QWEN_OMNI_CHAT_TEMPLATE = (
    "{% set audio_count = namespace(value=0) %}{% set image_count = namespace(value=0) %}"
    "{% set video_count = namespace(value=0) %}{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    "{% endif %}<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
    "{{ message['content'] }}<|im_end|>\n{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: "
    "{% endif %}<|vision_bos|><|IMAGE|><|vision_eos|>"
    "{% elif content['type'] == 'audio' or 'audio' in content or 'audio_url' in content %}"
    "{% set audio_count.value = audio_count.value + 1 %}{% if add_audio_id %}Audio {{ audio_count.value }}: "
    "{% endif %}<|audio_bos|><|AUDIO|><|audio_eos|>"
    "{% elif content['type'] == 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_bos|><|VIDEO|><|vision_eos|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _mrope_section(head_dim: int) -> list[int]:
    """Split head_dim/2 rotary frequencies over (time, height, width) in Qwen's 1/4, 3/8, 3/8 proportion."""
    half = head_dim // 2
    t = max(1, half // 4)
    h = (half - t) // 2
    return [t, h, half - t - h]


def _generation_config(tok):
    from transformers import GenerationConfig

    eos = [tok.convert_tokens_to_ids("<|im_end|>"), tok.convert_tokens_to_ids("<|endoftext|>")]
    return GenerationConfig(eos_token_id=eos, pad_token_id=tok.pad_token_id, do_sample=False)


def build_tiny_qwen_omni(
    out_dir: str | Path,
    *,
    hidden_size: int = 32,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 2,
    num_key_value_heads: int = 1,
    intermediate_size: int = 64,
    vision_hidden_size: int = 32,
    vision_depth: int = 1,
    audio_d_model: int = 32,
    audio_layers: int = 1,
    vocab_size: int = 1000,
    frame_pixels: int = 56 * 56,
    rope_theta: float = 10000.0,
    extra_corpus: Iterable[str] = (),
    seed: int = 0,
) -> Path:
    """Write a random-init Qwen2.5-Omni thinker + processor to ``out_dir`` and return the path.

    ``frame_pixels`` becomes the video processor's min = max pixels (56×56 → 4 merged tokens per 2 frames).
    """
    from transformers import (
        Qwen2_5OmniProcessor,
        Qwen2_5OmniThinkerConfig,
        Qwen2_5OmniThinkerForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLVideoProcessor,
        WhisperFeatureExtractor,
    )

    out = Path(out_dir)
    tok = train_tokenizer(extra_corpus, vocab_size=vocab_size)
    tid = tok.convert_tokens_to_ids
    head_dim = hidden_size // num_attention_heads
    config = Qwen2_5OmniThinkerConfig(
        audio_config=dict(
            num_mel_bins=128,
            encoder_layers=audio_layers,
            encoder_attention_heads=2,
            encoder_ffn_dim=2 * audio_d_model,
            d_model=audio_d_model,
            output_dim=hidden_size,
            n_window=50,
            max_source_positions=1500,
        ),
        vision_config=dict(
            depth=vision_depth,
            hidden_size=vision_hidden_size,
            intermediate_size=2 * vision_hidden_size,
            num_heads=2,
            out_hidden_size=hidden_size,
            fullatt_block_indexes=[vision_depth - 1],
            in_channels=3,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
        ),
        text_config=dict(
            vocab_size=len(tok),
            hidden_size=hidden_size,
            intermediate_size=intermediate_size,
            num_hidden_layers=num_hidden_layers,
            num_attention_heads=num_attention_heads,
            num_key_value_heads=num_key_value_heads,
            pad_token_id=tok.pad_token_id,
            # the generation config's stop tokens (and the tokenizer's eos among them): else the Trainer
            # "aligns" the config with the tokenizer and warns about it on every load (issue 54 #14)
            eos_token_id=_generation_config(tok).eos_token_id,
            rope_parameters={
                "rope_type": "default",
                "rope_theta": rope_theta,
                "mrope_section": _mrope_section(head_dim),
            },
        ),
        audio_token_index=tid("<|AUDIO|>"),
        image_token_index=tid("<|IMAGE|>"),
        video_token_index=tid("<|VIDEO|>"),
        audio_start_token_id=tid("<|audio_bos|>"),
        audio_end_token_id=tid("<|audio_eos|>"),
        vision_start_token_id=tid("<|vision_bos|>"),
        vision_end_token_id=tid("<|vision_eos|>"),
        user_token_id=tid("user") if "user" in tok.get_vocab() else tid("<|im_start|>"),
    )
    torch.manual_seed(seed)
    model = Qwen2_5OmniThinkerForConditionalGeneration(config).eval()
    model.generation_config = _generation_config(tok)
    pixels = {"shortest_edge": frame_pixels, "longest_edge": frame_pixels}
    processor = Qwen2_5OmniProcessor(
        image_processor=Qwen2VLImageProcessor(
            size=dict(pixels), patch_size=14, temporal_patch_size=2, merge_size=2
        ),
        video_processor=Qwen2VLVideoProcessor(
            size=dict(pixels), patch_size=14, temporal_patch_size=2, merge_size=2
        ),
        feature_extractor=WhisperFeatureExtractor(feature_size=128),
        tokenizer=tok,
        chat_template=QWEN_OMNI_CHAT_TEMPLATE,
    )
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def build_tiny_qwen_omni_full(
    out_dir: str | Path, *, thinker: str | Path | None = None, seed: int = 0
) -> Path:
    """Write a random-init full Qwen2.5-Omni (thinker + talker + token2wav + ``spk_dict.pt`` + processor) to
    ``out_dir``: what ``cavpref export`` splices a trained thinker into, offline. The thinker is the one in the
    folder ``thinker`` (its config, weights and processor), else a fresh ``build_tiny_qwen_omni``. The talker
    reads the thinker's hidden states and token ids (its tts text tokens are thinker pieces whose ids lie in its
    own 64-code vocabulary too); token2wav is a 2-layer DiT and a 6-stage BigVGAN of 64 channels (initialised
    so it speaks audibly); one speaker, "Chelsie" (the model's default), with a random conditioning vector and
    reference mel."""
    from transformers import (
        AutoProcessor,
        Qwen2_5OmniConfig,
        Qwen2_5OmniForConditionalGeneration,
        Qwen2_5OmniThinkerForConditionalGeneration,
    )

    out = Path(out_dir)
    if thinker is None:
        with tempfile.TemporaryDirectory(prefix="tiny-thinker-") as tmp:
            return build_tiny_qwen_omni_full(out, thinker=build_tiny_qwen_omni(tmp, seed=seed), seed=seed)
    trained = Qwen2_5OmniThinkerForConditionalGeneration.from_pretrained(thinker)
    processor = AutoProcessor.from_pretrained(thinker)
    tc_tid = processor.tokenizer.convert_tokens_to_ids
    tc = trained.config
    vocab, hidden = tc.text_config.vocab_size, tc.text_config.hidden_size
    ids = ("audio_token_index", "image_token_index", "video_token_index", "vision_start_token_id")
    ids += ("vision_end_token_id", "audio_start_token_id", "audio_end_token_id")
    # The talker's codec vocabulary stays small (64): Qwen2_5OmniForConditionalGeneration.generate stops the
    # talker on the hard-coded codec ids 8292 / 8294, and a random talker with a vocabulary as large as the
    # thinker's speaks the same codes for every video (tests/models/test_export_speech.py). Its tts_text_* ids
    # are thinker-vocabulary ids (generate embeds them with the thinker's table), yet transformers checks every
    # *_token_id of the talker config against the talker's own vocab_size (PreTrainedConfig.validate_token_ids):
    # so they are rare punctuation pieces of the thinker with ids below 64, in range of both vocabularies.
    codec_vocab = 64
    tts_text = {f"tts_text_{k}_token_id": tc_tid(t) for k, t in (("start", "$"), ("end", "%"), ("pad", "&"))}
    talker = dict(
        vocab_size=codec_vocab,
        tts_codec_pad_token_id=59,
        tts_codec_start_token_id=60,
        tts_codec_end_token_id=61,
        tts_codec_mask_token_id=62,
        **tts_text,
        embedding_size=hidden,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        head_dim=16,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": _mrope_section(16)},
        **{k: getattr(tc, k) for k in ids},
    )
    dit = dict(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        head_dim=16,
        emb_dim=16,
        num_embeds=codec_vocab,
    )
    dit.update(enc_emb_dim=8, enc_dim=16, enc_channels=[16, 16, 16, 16, 48], enc_attention_channels=8)
    dit.update(enc_se_channels=8, look_ahead_layers=[1], look_backward_layers=[0], block_size=4)
    config = Qwen2_5OmniConfig(
        thinker_config=tc.to_dict(),
        talker_config=talker,
        token2wav_config={"dit_config": dit, "bigvgan_config": {"upsample_initial_channel": 64}},
    )
    torch.manual_seed(seed)
    model = Qwen2_5OmniForConditionalGeneration(config).eval()
    # transformers draws every BigVGAN convolution from N(0, 0.02) (a real checkpoint overwrites them), which
    # shrinks the signal over the six upsampling stages to silence (peak 6e-8); PyTorch's fan-in init keeps it
    # audible (peak 0.11, RMS 0.057 for 8 codes), so a test of the waveform tests something.
    for module in model.token2wav.code2wav_bigvgan_model.modules():
        if isinstance(module, (torch.nn.Conv1d, torch.nn.ConvTranspose1d)):
            module.reset_parameters()
    model.thinker.load_state_dict(trained.state_dict())
    model.thinker.generation_config = trained.generation_config
    model.save_pretrained(out)
    processor.save_pretrained(out)
    speaker = {"bos_token": vocab - 5, "cond": torch.randn(1, 8), "ref_mel": torch.randn(1, 20, 80)}
    torch.save({"Chelsie": speaker}, out / "spk_dict.pt")
    return out


def demo_media(
    seed: int = 0,
    *,
    video: bool = True,
    audio: bool = True,
    num_frames: int = 4,
    size: int = 56,
    seconds: float = 1.0,
    sample_rate: int = 16000,
    fps: float = 2.0,
) -> DecodedMedia:
    """Deterministic random frames (uint8) and a tone plus noise (float32), for tests and examples."""
    rng = np.random.default_rng(seed)
    frames = rng.integers(0, 256, (num_frames, size, size, 3), dtype=np.uint8) if video else None
    times = np.arange(num_frames, dtype=np.float64) / fps if video else None
    wave = None
    if audio:
        t = np.arange(int(seconds * sample_rate)) / sample_rate
        wave = (0.3 * np.sin(2 * np.pi * (220 + 40 * seed) * t) + 0.05 * rng.standard_normal(t.shape)).astype(
            np.float32
        )
    duration = max(num_frames / fps if video else 0.0, seconds if audio else 0.0)
    return DecodedMedia(
        frames=frames, frame_times=times, audio=wave, sample_rate=sample_rate, duration=duration
    )


def build_tiny_composed(
    out_dir: str | Path,
    *,
    text_model_type: str = "qwen2",
    vision_model_type: str = "siglip_vision_model",
    hidden_size: int = 32,
    num_hidden_layers: int = 2,
    num_attention_heads: int = 2,
    num_key_value_heads: int = 1,
    intermediate_size: int = 64,
    vision_hidden_size: int = 32,
    image_size: int = 32,
    patch_size: int = 8,
    tokens_per_frame: int = 4,
    audio_d_model: int = 32,
    audio_seconds: int = 5,
    audio_pool_stride: int = 5,
    num_mel_bins: int = 80,
    vocab_size: int = 1000,
    extra_corpus: Iterable[str] = (),
    seed: int = 0,
) -> Path:
    """Write a random-init composed AVLLM (``vision_model_type`` tower, e.g. SigLIP or ``clip_vision_model`` +
    Whisper encoder + ``text_model_type`` LM, e.g. ``qwen2`` or ``llama``) and its processor to ``out_dir``.
    Audio longer than ``audio_seconds`` is cut by the processor."""
    from transformers import (
        AutoConfig,
        SiglipImageProcessor,
        WhisperConfig,
        WhisperFeatureExtractor,
    )

    from cavpref.models.composed import ComposedAVConfig, ComposedAVForCausalLM, ComposedAVProcessor

    out = Path(out_dir)
    tok = train_tokenizer(extra_corpus, vocab_size=vocab_size)
    pad, eos = tok.pad_token_id, tok.convert_tokens_to_ids("<|im_end|>")
    text = AutoConfig.for_model(
        text_model_type,
        vocab_size=len(tok),
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        num_key_value_heads=num_key_value_heads,
        max_position_embeddings=2048,
        tie_word_embeddings=False,
        pad_token_id=pad,
        bos_token_id=pad,
        eos_token_id=eos,
    )
    vision = AutoConfig.for_model(
        vision_model_type,
        hidden_size=vision_hidden_size,
        num_hidden_layers=1,
        intermediate_size=2 * vision_hidden_size,
        num_attention_heads=2,
        image_size=image_size,
        patch_size=patch_size,
    )
    audio = WhisperConfig(
        d_model=audio_d_model,
        encoder_layers=1,
        encoder_attention_heads=2,
        encoder_ffn_dim=2 * audio_d_model,
        decoder_layers=1,
        decoder_attention_heads=2,
        decoder_ffn_dim=2 * audio_d_model,
        num_mel_bins=num_mel_bins,
        max_source_positions=audio_seconds * 50,
        vocab_size=len(tok),
        pad_token_id=pad,
        bos_token_id=pad,
        eos_token_id=pad,
        decoder_start_token_id=pad,
    )
    config = ComposedAVConfig(
        vision_config=vision.to_dict(),
        audio_config=audio.to_dict(),
        text_config=text.to_dict(),
        video_token_id=tok.convert_tokens_to_ids("<|VIDEO|>"),
        audio_token_id=tok.convert_tokens_to_ids("<|AUDIO|>"),
        tokens_per_frame=tokens_per_frame,
        audio_pool_stride=audio_pool_stride,
    )
    torch.manual_seed(seed)
    model = ComposedAVForCausalLM(config).eval()
    model.generation_config = _generation_config(tok)
    processor = ComposedAVProcessor(
        SiglipImageProcessor(size={"height": image_size, "width": image_size}),
        WhisperFeatureExtractor(feature_size=num_mel_bins, chunk_length=audio_seconds),
        tok,
        chat_template=QWEN_OMNI_CHAT_TEMPLATE,
        tokens_per_frame=tokens_per_frame,
        audio_pool_stride=audio_pool_stride,
    )
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


# After the text pieces, as in Whisper's vocabulary: the ASR pipeline reads every id past <|notimestamps|> as
# a timestamp, so text ids must come before it.
WHISPER_SPECIAL = [
    "<|startoftranscript|>",
    "<|en|>",
    "<|translate|>",
    "<|transcribe|>",
    "<|startoflm|>",
    "<|startofprev|>",
    "<|nocaptions|>",
    "<|notimestamps|>",
]


def build_tiny_whisper(
    out_dir: str | Path,
    *,
    d_model: int = 16,
    layers: int = 1,
    heads: int = 2,
    num_mel_bins: int = 80,
    max_target_positions: int = 64,
    vocab_size: int = 400,
    extra_corpus: Iterable[str] = (),
    seed: int = 0,
) -> Path:
    """Write a random-init ``WhisperForConditionalGeneration`` and its ``WhisperProcessor`` (a byte-level BPE
    trained offline, English-only special tokens) to ``out_dir``: the transformers speech-recognition
    pipeline runs it like ``openai/whisper-small`` (its transcripts are noise). Specials other than the end
    of text are suppressed, so it writes text rather than ending at once."""
    from tokenizers import AddedToken
    from transformers import (
        GenerationConfig,
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
        WhisperTokenizer,
    )

    from cavpref.models.tokenizer import _merges, train_qwen2_bpe

    out = Path(out_dir)
    bpe = train_qwen2_bpe(extra_corpus, vocab_size, ["<|endoftext|>"])
    tok = WhisperTokenizer(vocab=bpe.get_vocab(), merges=_merges(bpe), pad_token="<|endoftext|>")
    tok.add_tokens([AddedToken(t, special=True, normalized=False) for t in WHISPER_SPECIAL])
    ids = {t: tok.convert_tokens_to_ids(t) for t in ["<|endoftext|>", *WHISPER_SPECIAL]}
    eot, sot = ids["<|endoftext|>"], ids["<|startoftranscript|>"]
    config = WhisperConfig(
        vocab_size=len(tok),
        num_mel_bins=num_mel_bins,
        d_model=d_model,
        encoder_layers=layers,
        decoder_layers=layers,
        encoder_attention_heads=heads,
        decoder_attention_heads=heads,
        encoder_ffn_dim=2 * d_model,
        decoder_ffn_dim=2 * d_model,
        max_target_positions=max_target_positions,
        decoder_start_token_id=sot,
        eos_token_id=eot,
        pad_token_id=eot,
        bos_token_id=eot,
    )
    torch.manual_seed(seed)
    model = WhisperForConditionalGeneration(config)
    model.generation_config = GenerationConfig(
        decoder_start_token_id=sot,
        eos_token_id=eot,
        pad_token_id=eot,
        no_timestamps_token_id=ids["<|notimestamps|>"],
        lang_to_id={"<|en|>": ids["<|en|>"]},
        task_to_id={"transcribe": ids["<|transcribe|>"], "translate": ids["<|translate|>"]},
        is_multilingual=True,
        begin_suppress_tokens=[eot],
        suppress_tokens=[i for t, i in ids.items() if t != "<|endoftext|>"],
    )
    model.save_pretrained(out)
    WhisperProcessor(
        feature_extractor=WhisperFeatureExtractor(feature_size=num_mel_bins), tokenizer=tok
    ).save_pretrained(out)
    return out
