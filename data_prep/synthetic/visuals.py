"""Visual signatures: each entity is a solid coloured shape in one of three slots (left / middle / right).

Sized for tiny vision encoders: at the default 112x112 a shape is ~27 px across (about two 14-px
patches), on a dark, low-saturation background, so colour alone identifies an entity. While an entity
sounds it gets a white outline and bobs up and down (``highlight``), so the video says *when* it sounds
and the audio says *what* sounds and how loud: audio and video agree, and most questions need both.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .catalogue import HIGHLIGHT, RGB, SLOTS

# scene -> (top colour, bottom colour, horizon as a fraction of the height)
BACKGROUNDS: dict[str, tuple[RGB, RGB, float]] = {
    "indoor": ((55, 42, 32), (85, 65, 45), 0.75),
    "outdoor": ((40, 60, 110), (35, 80, 35), 0.6),
    "street": ((75, 75, 80), (40, 40, 40), 0.7),
    "field": ((40, 60, 110), (35, 80, 35), 0.6),
}


@dataclass(frozen=True)
class Placed:
    """One entity on screen: its colour, shape, slot index (0..2) and sounding intervals (s)."""

    color: RGB
    shape: str
    slot: int
    events: Sequence[Sequence[float]]


def geometry(
    width: int, height: int, shape_scale: float = 1.0, slot_spread: float | None = None
) -> dict[str, float]:
    """Shape half-size, slot centres and bob amplitude for a frame size (also stored as ground truth).
    ``slot_spread``: the left / right slot centres' distance from the frame's centre as a fraction of half the
    width (None: the thirds' centres, 2/3); ``shape_scale`` multiplies the half-size
    (``WorldConfig.slot_spread`` / ``shape_scale``)."""
    r = int(min(width / 3, height) * 0.36 * shape_scale)
    if slot_spread is None:
        centers = [round((s + 0.5) * width / 3, 2) for s in range(len(SLOTS))]
    else:
        centers = [round(width / 2 + (s - 1) * slot_spread * width / 2, 2) for s in range(len(SLOTS))]
    return {
        "radius": r,
        "centers_x": centers,
        "center_y": round(height / 2, 2),
        "bob": max(1, round(0.03 * height)),
        "outline": max(2, r // 4),
    }


def shape_mask(shape: str, dx: np.ndarray, dy: np.ndarray, r: float) -> np.ndarray:
    ax, ay = np.abs(dx), np.abs(dy)
    if shape == "circle":
        return dx**2 + dy**2 <= r**2
    if shape == "square":
        return (ax <= 0.85 * r) & (ay <= 0.85 * r)
    if shape == "diamond":
        return ax + ay <= r
    if shape in ("triangle", "inv_triangle"):
        y = dy if shape == "triangle" else -dy  # apex at the top for "triangle"
        return (y >= -r) & (y <= 0.8 * r) & (ax <= (y + r) / 1.8)
    if shape == "plus":
        return ((ax <= r / 3) & (ay <= r)) | ((ay <= r / 3) & (ax <= r))
    if shape == "hbar":
        return (ax <= r) & (ay <= 0.5 * r)
    if shape == "vbar":
        return (ax <= 0.5 * r) & (ay <= r)
    raise ValueError(f"unknown shape {shape!r}")


def background(scene: str, width: int, height: int, ramp: int = 0, spot: int = 0) -> np.ndarray:
    """The scene's sky / ground (or wall / floor) split at its horizon, plus ``ramp`` levels of light
    from -ramp at the left edge to +ramp at the right edge (``WorldConfig.background_ramp``) and ``spot``
    levels of red at the centre falling to 0 at both edges (``WorldConfig.background_spot``)."""
    if scene not in BACKGROUNDS:
        raise ValueError(f"unknown scene {scene!r} (expected one of {sorted(BACKGROUNDS)})")
    top, bottom, horizon = BACKGROUNDS[scene]
    img = np.empty((height, width, 3), np.uint8)
    cut = round(horizon * height)
    img[:cut] = top
    img[cut:] = bottom
    if not (ramp or spot):
        return img
    light = np.repeat(np.rint(np.linspace(-ramp, ramp, width))[None, :, None], 3, axis=2)
    light[..., 0] += np.rint(spot * (1.0 - np.abs(np.linspace(-1.0, 1.0, width))))[None, :]
    return np.clip(img.astype(np.int16) + light.astype(np.int16), 0, 255).astype(np.uint8)


def sounding_at(events: Sequence[Sequence[float]], t: float) -> bool:
    return any(on <= t < off for on, off in events)


def render(
    scene: str,
    placed: Sequence[Placed],
    duration: float,
    fps: float,
    width: int,
    height: int,
    highlight: bool = True,
    ramp: int = 0,
    spot: int = 0,
    shape_scale: float = 1.0,
    slot_spread: float | None = None,
) -> np.ndarray:
    """All frames of a clip, (T, H, W, 3) uint8, T = round(duration * fps); frame i shows time i / fps."""
    geo = geometry(width, height, shape_scale, slot_spread)
    r, bob, band = geo["radius"], geo["bob"], geo["outline"]
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float64)
    bg = background(scene, width, height, ramp, spot)
    n_frames = round(duration * fps)
    frames = np.repeat(bg[None], n_frames, axis=0)
    for p in placed:
        cx = geo["centers_x"][p.slot]
        still = shape_mask(p.shape, xx - cx, yy - geo["center_y"], r)
        for i in range(n_frames):
            t = i / fps
            if highlight and sounding_at(p.events, t):
                cy = geo["center_y"] + round(bob * np.sin(2 * np.pi * 3.0 * t))
                dx, dy = xx - cx, yy - cy
                frames[i][shape_mask(p.shape, dx, dy, r + band)] = HIGHLIGHT
                frames[i][shape_mask(p.shape, dx, dy, r)] = p.color
            else:
                frames[i][still] = p.color
    return frames
