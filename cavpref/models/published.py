"""Published model configs, for building a checkpoint's architecture on the meta device without the weights.

``cavpref check`` sizes a run before any download; for a hub id that is not on disk it needs the config's
values. These are the ``thinker_config`` values of ``Qwen/Qwen2.5-Omni-7B``'s config.json (the defaults of
transformers' ``Qwen2_5OmniThinkerConfig`` differ from them in the vision width and in tied embeddings); on the
meta device they give 8,931,813,888 parameters (tests/test_check.py). ``--model_config FILE`` takes any
config.json instead.
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

PUBLISHED: dict[str, dict[str, Any]] = {"Qwen/Qwen2.5-Omni-7B": QWEN2_5_OMNI_7B_THINKER}
