"""Tiny randomly initialised CLAP / CLIP checkpoints, built from configs with locally made tokenizers.

They are saved exactly as a hub checkpoint is (``save_pretrained`` of model and processor), so tests,
benchmarks and the offline quickstart exercise the real ``from_pretrained(path)`` loading path with
nothing downloaded. Their scores are meaningless, only their plumbing is real.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch
from tokenizers.pre_tokenizers import ByteLevel


def _byte_vocab(specials: list[str], word_end: str | None = None) -> dict[str, int]:
    """A byte-level BPE vocabulary without merges: every byte is a token (so any text encodes)."""
    vocab = {t: i for i, t in enumerate(specials)}
    for ch in sorted(ByteLevel.alphabet()):
        vocab.setdefault(ch, len(vocab))
        if word_end:
            vocab.setdefault(ch + word_end, len(vocab))
    return vocab


def save_tiny_clap(
    path: str | os.PathLike,
    seed: int = 0,
    sample_rate: int = 8000,
    max_length_s: int = 1,
    hidden_size: int = 32,
    num_mel_bins: int = 16,
) -> Path:
    """A ClapModel (HTSAT audio tower, RoBERTa text tower) a few hundred KB in size, plus ClapProcessor.
    ``hidden_size`` is the width of both towers (the HTSAT patch embedding is half of it)."""
    from transformers import ClapConfig, ClapFeatureExtractor, ClapModel, ClapProcessor, RobertaTokenizer

    torch.manual_seed(seed)
    tokenizer = RobertaTokenizer(
        vocab=_byte_vocab(["<s>", "<pad>", "</s>", "<unk>", "<mask>"]), merges=[], model_max_length=64
    )
    config = ClapConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": hidden_size,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "intermediate_size": 37,
            "max_position_embeddings": 72,
            "pad_token_id": 1,
            "bos_token_id": 0,
            "eos_token_id": 2,
        },
        audio_config={
            "spec_size": 64,
            "window_size": 4,
            "depths": [1, 1],
            "num_attention_heads": [2, 2],
            "hidden_size": hidden_size,
            "patch_embeds_hidden_size": hidden_size // 2,
            "num_mel_bins": num_mel_bins,
            "num_hidden_layers": 2,
        },
        projection_dim=16,
    )
    features = ClapFeatureExtractor(
        feature_size=num_mel_bins,
        sampling_rate=sample_rate,
        hop_length=sample_rate // 100,
        max_length_s=max_length_s,
        fft_window_size=256 * max(1, sample_rate // 8000),
        frequency_max=sample_rate // 2,
        truncation="rand_trunc",
        padding="repeatpad",
    )
    path = Path(path)
    ClapModel(config).eval().save_pretrained(path)
    ClapProcessor(feature_extractor=features, tokenizer=tokenizer).save_pretrained(path)
    return path


def save_tiny_clip(
    path: str | os.PathLike, seed: int = 0, image_size: int = 32, hidden_size: int = 32
) -> Path:
    """A CLIPModel (ViT vision tower, CLIP text tower) plus CLIPProcessor, tiny (``hidden_size`` wide)."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    torch.manual_seed(seed)
    tokenizer = CLIPTokenizer(
        vocab=_byte_vocab(["<|startoftext|>", "<|endoftext|>"], word_end="</w>"),
        merges=[],
        model_max_length=77,
    )
    config = CLIPConfig(
        text_config={
            "vocab_size": len(tokenizer),
            "hidden_size": hidden_size,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "intermediate_size": 37,
            "max_position_embeddings": 77,
            "bos_token_id": 0,
            "eos_token_id": 1,
            "pad_token_id": 1,
        },
        vision_config={
            "image_size": image_size,
            "patch_size": 8,
            "hidden_size": hidden_size,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "intermediate_size": 37,
        },
        projection_dim=16,
    )
    images = CLIPImageProcessor(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
    )
    path = Path(path)
    CLIPModel(config).eval().save_pretrained(path)
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(path)
    return path


def save_tiny_pe_audio_video(
    path: str | os.PathLike, seed: int = 0, sample_rate: int = 8000, image_size: int = 32
) -> Path:
    """A PeAudioVideoModel (DAC + transformer audio tower, timm PE-core video tower, ModernBERT text) and
    its PeAudioVideoProcessor, tiny. Needs ``timm``."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        PeAudioFeatureExtractor,
        PeAudioVideoConfig,
        PeAudioVideoModel,
        PeAudioVideoProcessor,
        PreTrainedTokenizerFast,
    )
    from transformers.models.pe_video.video_processing_pe_video import PeVideoVideoProcessor

    torch.manual_seed(seed)
    enc = {
        "hidden_size": 32,
        "intermediate_size": 48,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "head_dim": 16,
        "max_position_embeddings": 512,
    }
    ratios = [2, 4, 5, 5]  # hop 200: 40 audio tokens per second at 8 kHz
    config = PeAudioVideoConfig(
        text_config={
            "model_type": "modernbert",
            "vocab_size": 64,
            "hidden_size": 32,
            "intermediate_size": 48,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
            "max_position_embeddings": 64,
            "pad_token_id": 0,
            "bos_token_id": 1,
            "eos_token_id": 2,
            "cls_token_id": 1,
            "sep_token_id": 2,
        },
        audio_video_config=dict(
            **enc,
            audio_config=dict(
                **enc,
                dac_config={
                    "encoder_hidden_size": 4,
                    "downsampling_ratios": ratios,
                    "decoder_hidden_size": 4,
                    "hidden_size": 8,
                    "codebook_dim": 8,
                },
            ),
            video_config=dict(
                **enc,
                vision_config={
                    "architecture": "vit_pe_core_tiny_patch16_384",
                    "num_classes": 16,
                    "model_args": {"img_size": image_size, "embed_dim": 32, "depth": 1, "num_heads": 2},
                },
            ),
        ),
    )
    word_level = Tokenizer(
        models.WordLevel({"[PAD]": 0, "[CLS]": 1, "[SEP]": 2, "[UNK]": 3}, unk_token="[UNK]")
    )
    word_level.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=word_level,
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        unk_token="[UNK]",
    )
    processor = PeAudioVideoProcessor(
        feature_extractor=PeAudioFeatureExtractor(sampling_rate=sample_rate, hop_length=int(np.prod(ratios))),
        video_processor=PeVideoVideoProcessor(
            size={"height": image_size, "width": image_size},
            do_resize=True,
            do_rescale=True,
            do_normalize=True,
            image_mean=[0.5] * 3,
            image_std=[0.5] * 3,
            do_sample_frames=False,
        ),
        tokenizer=tokenizer,
    )
    path = Path(path)
    PeAudioVideoModel(config).eval().save_pretrained(path)
    processor.save_pretrained(path)
    return path


def save_tiny_open_clip(path: str | os.PathLike, seed: int = 0, image_size: int = 32) -> tuple[Path, Path]:
    """A tiny randomly initialised ``open_clip`` CLIP, built by the library's own ``create_model`` from a
    model-config JSON (no weights downloaded): returns (config JSON, checkpoint file), the ``clip_model`` /
    ``clip_pretrained`` of ``clip_backend: open_clip``."""
    import json

    import open_clip

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    config = path / "tiny-open-clip.json"
    config.write_text(
        json.dumps(
            {
                "embed_dim": 16,
                "vision_cfg": {
                    "image_size": image_size,
                    "layers": 1,
                    "width": 32,
                    "head_width": 16,
                    "patch_size": 8,
                },
                "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
            }
        )
    )
    open_clip.add_model_config(config)
    torch.manual_seed(seed)
    model = open_clip.create_model(config.stem, pretrained=None)
    checkpoint = path / "open_clip_model.pt"
    torch.save({"state_dict": model.state_dict()}, checkpoint)
    return config, checkpoint


# The hub ids laion_clap reads by name: its ``training.data`` module loads three tokenizers at import, and
# ``CLAP_Module(tmodel="roberta")`` builds its text tower with ``RobertaModel.from_pretrained("roberta-base")``.
LAION_CLAP_HUB_IDS = ("bert-base-uncased", "roberta-base", "facebook/bart-base")


def save_laion_clap_text_side(root: str | os.PathLike, seed: int = 0) -> Path:
    """Folders named like the hub ids laion_clap loads (``LAION_CLAP_HUB_IDS``) under ``root``: a byte-level
    tokenizer in each, and in ``roberta-base`` a tiny random ``RobertaModel`` (hidden size 768, the width
    laion_clap's text projection expects; one layer). ``from_pretrained(name)`` takes a local folder of that
    name first, so laion_clap imports and builds offline with ``root`` as the working directory."""
    from transformers import BertTokenizer, RobertaConfig, RobertaModel, RobertaTokenizer

    root = Path(root)
    torch.manual_seed(seed)
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    roberta_tok = RobertaTokenizer(vocab=_byte_vocab(specials), merges=[], model_max_length=77)
    for name in ("roberta-base", "facebook/bart-base"):
        roberta_tok.save_pretrained(root / name)
    bert_vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghijklmnopqrstuvwxyz0123456789"]
    (root / "bert-base-uncased").mkdir(parents=True, exist_ok=True)
    (root / "bert-base-uncased" / "vocab.txt").write_text("\n".join(bert_vocab) + "\n")
    BertTokenizer.from_pretrained(str(root / "bert-base-uncased")).save_pretrained(root / "bert-base-uncased")
    config = RobertaConfig(
        vocab_size=len(roberta_tok),
        hidden_size=768,
        num_hidden_layers=1,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=80,  # 77 tokens + RoBERTa's padding offset
        pad_token_id=1,
        bos_token_id=0,
        eos_token_id=2,
    )
    RobertaModel(config).save_pretrained(root / "roberta-base")
    return root
