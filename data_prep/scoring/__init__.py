"""Similarity scorers for data prep: CLAP (audio–text), CLIP (video–text), AVSM (audio–video), the
preference deltas that calibrate CAVPref's β, and the AudioSet alignment filter. See docs/scoring.md."""

from .alignment import PAPER_THRESHOLD, alignment_filter
from .cache import EmbeddingCache, fingerprint
from .config import ScoringConfig
from .encoders import AudioTextEncoder, AudioVideoEncoder, ImageTextEncoder, load_encoder, register_backend
from .media import KeyedMedia, MediaReader, audio_view, video_view
from .preferences import derived_vocabulary, score_preferences
from .scorers import AVSMScorer, ClapScorer, ClipScorer, Scorers

__all__ = [
    "PAPER_THRESHOLD",
    "AVSMScorer",
    "AudioTextEncoder",
    "AudioVideoEncoder",
    "ClapScorer",
    "ClipScorer",
    "EmbeddingCache",
    "ImageTextEncoder",
    "KeyedMedia",
    "MediaReader",
    "Scorers",
    "ScoringConfig",
    "alignment_filter",
    "audio_view",
    "derived_vocabulary",
    "fingerprint",
    "load_encoder",
    "register_backend",
    "score_preferences",
    "video_view",
]
