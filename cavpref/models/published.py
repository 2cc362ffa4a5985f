"""Published model configs, for building a checkpoint's architecture on the meta device without the weights.

``cavpref check`` sizes a run before any download; for a hub id that is not on disk it needs the config's
values. These are the ``thinker_config`` values of ``Qwen/Qwen2.5-Omni-7B``'s config.json (the defaults of
transformers' ``Qwen2_5OmniThinkerConfig`` differ from them in the vision width and in tied embeddings); on the
meta device they give 8,931,813,888 parameters (tests/apps/test_check.py). ``--model_config FILE`` takes any
config.json instead.

``QWEN2_5_OMNI_ADDED_TOKENS`` and ``QWEN2_5_OMNI_7B_PREPROCESSOR`` are the checkpoint's tokenizer and
preprocessor facts that token counts depend on; ``cavpref.models.real_config`` builds a tokenizer / processor
from them offline (the BPE merges themselves are not reproduced: text token counts are not the real ones).
"""

from __future__ import annotations

from typing import Any

QWEN2_5_OMNI_7B_THINKER: dict[str, Any] = {
    "model_type": "qwen2_5_omni_thinker",
    "audio_token_index": 151646,
    "image_token_index": 151655,
    "video_token_index": 151656,
    "audio_start_token_id": 151647,
    "audio_end_token_id": 151648,
    "vision_start_token_id": 151652,
    "vision_end_token_id": 151653,
    "user_token_id": 872,
    "position_id_per_seconds": 25,
    "seconds_per_chunk": 2,
    "pad_token_id": 151643,
    "text_config": {
        "vocab_size": 152064,
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "hidden_act": "silu",
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-06,
        "tie_word_embeddings": False,
        "use_sliding_window": False,
        "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]},
    },
    "vision_config": {
        "depth": 32,
        "hidden_size": 1280,
        "intermediate_size": 3420,
        "num_heads": 16,
        "in_channels": 3,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
        "window_size": 112,
        "out_hidden_size": 3584,
        "fullatt_block_indexes": [7, 15, 23, 31],
        "hidden_act": "silu",
    },
    "audio_config": {
        "d_model": 1280,
        "encoder_layers": 32,
        "encoder_attention_heads": 20,
        "encoder_ffn_dim": 5120,
        "num_mel_bins": 128,
        "max_source_positions": 1500,
        "n_window": 100,
        "output_dim": 3584,
    },
}

#: The Qwen2.5 tokenizer's added tokens as Qwen2.5-Omni names them, in id order from 151643 (right after the
#: 151,643 BPE pieces), with their ``special`` flag. The ids the thinker config names (pad 151643, audio
#: 151646-151648, vision 151652 / 151653, image 151655, video 151656) are checked against
#: ``QWEN2_5_OMNI_7B_THINKER`` in tests/models/test_real_config.py; the others are the Qwen2.5 family's table.
QWEN2_5_OMNI_ADDED_TOKENS: tuple[tuple[int, str, bool], ...] = (
    (151643, "<|endoftext|>", True),
    (151644, "<|im_start|>", True),
    (151645, "<|im_end|>", True),
    (151646, "<|AUDIO|>", True),
    (151647, "<|audio_bos|>", True),
    (151648, "<|audio_eos|>", True),
    (151649, "<|box_end|>", True),
    (151650, "<|quad_start|>", True),
    (151651, "<|quad_end|>", True),
    (151652, "<|vision_bos|>", True),
    (151653, "<|vision_eos|>", True),
    (151654, "<|vision_pad|>", True),
    (151655, "<|IMAGE|>", True),
    (151656, "<|VIDEO|>", True),
    (151657, "<tool_call>", False),
    (151658, "</tool_call>", False),
    (151659, "<|fim_prefix|>", False),
    (151660, "<|fim_middle|>", False),
    (151661, "<|fim_suffix|>", False),
    (151662, "<|fim_pad|>", False),
    (151663, "<|repo_name|>", False),
    (151664, "<|file_sep|>", False),
)
QWEN2_5_BPE_PIECES = (
    151643  # ids 0..151642 are byte-level BPE pieces; "user" is 872 (the config's user_token_id)
)

#: ``Qwen/Qwen2.5-Omni-7B``'s flat preprocessor_config.json (one file for the image / video processor and the
#: Whisper feature extractor): 3,136 to 12,845,056 pixels per frame, 14-pixel patches merged 2x2, 2 frames per
#: temporal patch, CLIP mean / std; 128 mel bins, 10 ms hop, audio padded to ``chunk_length`` 300 s.
QWEN2_5_OMNI_7B_PREPROCESSOR: dict[str, Any] = {
    "min_pixels": 3136,
    "max_pixels": 12845056,
    "patch_size": 14,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
    "feature_size": 128,
    "sampling_rate": 16000,
    "hop_length": 160,
    "n_fft": 400,
    "chunk_length": 300,
    "padding_value": 0.0,
    "return_attention_mask": True,
}

PUBLISHED: dict[str, dict[str, Any]] = {"Qwen/Qwen2.5-Omni-7B": QWEN2_5_OMNI_7B_THINKER}
