"""The synthetic audio-visual world: a small corpus in the real on-disk formats of MUSIC-AVQA, AVQA and
AudioSet, generated from a seed, with its ground truth in world.json (see docs/synthetic_world.md)."""

from .config import WORLD_VERSION, WorldConfig
from .world import generate_world

__all__ = ["WORLD_VERSION", "WorldConfig", "generate_world"]
