"""Acoustic signatures: pure numpy synthesis of every entity's sound, gated by its events.

Each entity's signal is normalised to unit RMS *while it sounds*, then scaled by its gain, so "louder"
in the ground truth means a larger RMS in the file, independent of timbre or rhythm. Rhythmic notes are
phase-locked to each event's onset, so a note starts exactly when the event does. Everything above
0.45 x the sample rate is left out (no aliasing at low sample rates). All randomness comes from the
caller's generator: the same generator state gives the same samples.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from .catalogue import Instrument, SoundSource

Events = Sequence[Sequence[float]]
RAMP_S = 0.01  # onset/offset ramp: no clicks, and an event's edges stay sharp at 10 ms


def gate(events: Events, n: int, sr: int) -> np.ndarray:
    """1 inside events, 0 outside, with linear ramps of ``RAMP_S`` inside each event's edges."""
    t = np.arange(n) / sr
    g = np.zeros(n)
    for on, off in events:
        g = np.maximum(g, np.clip(np.minimum(t - on, off - t) / RAMP_S, 0.0, 1.0))
    return g


def since_onset(events: Events, n: int, sr: int) -> np.ndarray:
    """Seconds since the onset of the event containing each sample (0 outside events)."""
    t = np.arange(n) / sr
    out = np.zeros(n)
    for on, off in events:
        inside = (t >= on) & (t < off)
        out[inside] = t[inside] - on
    return out


def note_envelope(phase: np.ndarray, period: float, decay: float) -> np.ndarray:
    """Repeated struck notes: 5 ms attack, exponential decay, restarting every ``period`` seconds."""
    p = np.mod(phase, period)
    return np.minimum(1.0, p / 0.005) * np.exp(-p / decay)


def harmonic(freq: np.ndarray | float, n: int, sr: int, weights: Sequence[float]) -> np.ndarray:
    """Sum of partials k*freq with ``weights``; ``freq`` may vary in time (glides, vibrato)."""
    freq = np.broadcast_to(np.asarray(freq, dtype=np.float64), (n,))
    phase = 2 * np.pi * np.cumsum(freq) / sr
    out = np.zeros(n)
    for k, w in enumerate(weights, start=1):
        if w:
            out += w * np.sin(k * phase) * (k * freq < 0.45 * sr)
    return out


def band_noise(rng: np.random.Generator, n: int, sr: int, lo: float, hi: float) -> np.ndarray:
    """White noise band-limited to [lo, hi] Hz (FFT mask), unit RMS."""
    spec = np.fft.rfft(rng.standard_normal(n))
    freqs = np.fft.rfftfreq(n, 1 / sr)
    spec[(freqs < lo) | (freqs > min(hi, 0.45 * sr))] = 0
    x = np.fft.irfft(spec, n)
    return x / (np.sqrt(np.mean(x**2)) + 1e-12)


def _clamp(f: float, sr: int) -> float:
    return min(f, 0.4 * sr)


def instrument_raw(inst: Instrument, ph: np.ndarray, sr: int, rng: np.random.Generator) -> np.ndarray:
    n = len(ph)
    t = np.arange(n) / sr
    freq = inst.f0 * (1 + inst.vibrato * np.sin(2 * np.pi * 5.0 * t))
    x = harmonic(freq, n, sr, inst.harmonics)
    if inst.noise:
        x = x + inst.noise * band_noise(rng, n, sr, 100, 4000)
    if inst.rhythm_hz > 0:
        period = 1.0 / inst.rhythm_hz
        x = x * note_envelope(ph, period, 0.3 * period)
    return x


def _bark(ph, sr, rng):
    n = len(ph)
    env = note_envelope(ph, 0.4, 0.045) * (np.mod(ph, 0.4) < 0.15)
    return env * (
        harmonic(680 * (1 + 0.15 * np.exp(-np.mod(ph, 0.4) / 0.05)), n, sr, (1, 0.6, 0.4))
        + 0.4 * band_noise(rng, n, sr, 300, 3000)
    )


def _meow(ph, sr, rng):
    x = np.mod(ph, 1.2) / 0.7
    inside = x < 1
    freq = 520 + 260 * np.sin(np.pi * np.clip(x, 0, 1))
    return harmonic(freq, len(ph), sr, (1, 0.5, 0.3)) * np.sin(np.pi * np.clip(x, 0, 1)) * inside


def _crow(ph, sr, rng):
    p = np.mod(ph, 2.0)
    freq = np.where(p < 0.3, 650 + 350 * p / 0.3, 1000.0)
    return harmonic(freq, len(ph), sr, (1, 0.7, 0.5, 0.3)) * (p < 1.5) * np.minimum(1, (1.5 - p) / 0.1)


def _chirp(ph, sr, rng):
    p = np.mod(ph, 1 / 6)
    lo, hi = _clamp(3000, sr), _clamp(4200, sr)
    freq = lo + (hi - lo) * np.clip(p / 0.07, 0, 1)
    return harmonic(freq, len(ph), sr, (1,)) * (p < 0.07) * np.sin(np.pi * np.clip(p / 0.07, 0, 1))


def _horn(ph, sr, rng):
    n = len(ph)
    return harmonic(740.0, n, sr, (1, 0, 0.33)) + harmonic(930.0, n, sr, (1, 0, 0.33))


def _train_horn(ph, sr, rng):
    n = len(ph)
    chord = sum(harmonic(f, n, sr, (1, 0.5, 0.3)) for f in (311.0, 370.0, 466.0))
    return chord * (0.7 + 0.3 * np.sin(2 * np.pi * 0.5 * ph))


def _rotor(ph, sr, rng):
    n = len(ph)
    pulse = 0.3 + 0.7 * (np.mod(ph, 1 / 14) < 0.02)
    return pulse * band_noise(rng, n, sr, 60, 800) + 0.5 * harmonic(90.0, n, sr, (1, 0.5))


def _siren(ph, sr, rng):
    t = np.arange(len(ph)) / sr
    return harmonic(975 + 325 * np.sin(2 * np.pi * t / 1.6), len(ph), sr, (1, 0.3))


def _thunder(ph, sr, rng):
    return band_noise(rng, len(ph), sr, 20, 250) * (0.4 + 0.6 * np.exp(-np.mod(ph, 2.0) / 0.8))


def _rain(ph, sr, rng):
    return band_noise(rng, len(ph), sr, 2000, 8000)


def _wind(ph, sr, rng):
    t = np.arange(len(ph)) / sr
    return band_noise(rng, len(ph), sr, 200, 1200) * (0.6 + 0.4 * np.sin(2 * np.pi * 0.4 * t))


def _clap(ph, sr, rng):
    return band_noise(rng, len(ph), sr, 800, 5000) * note_envelope(ph, 0.25, 0.012)


RECIPES: dict[str, Callable[[np.ndarray, int, np.random.Generator], np.ndarray]] = {
    "bark": _bark,
    "meow": _meow,
    "crow": _crow,
    "chirp": _chirp,
    "horn": _horn,
    "train_horn": _train_horn,
    "rotor": _rotor,
    "siren": _siren,
    "thunder": _thunder,
    "rain": _rain,
    "wind": _wind,
    "clap": _clap,
}


def entity_sound(
    entity: Instrument | SoundSource, events: Events, n: int, sr: int, rng: np.random.Generator
) -> np.ndarray:
    """The entity's sound over ``n`` samples: silent outside ``events``, unit RMS while sounding."""
    g = gate(events, n, sr)
    if not g.any():
        return np.zeros(n)
    ph = since_onset(events, n, sr)
    if isinstance(entity, Instrument):
        raw = instrument_raw(entity, ph, sr, rng)
    else:
        raw = RECIPES[entity.sound](ph, sr, rng)
    x = raw * g
    rms = np.sqrt(np.sum(x**2) / np.sum(g**2))
    return x / (rms + 1e-12)


def mix(parts: Sequence[tuple[np.ndarray, float]], n: int, peak: float = 0.95) -> np.ndarray:
    """Weighted sum, scaled down as a whole if it would clip: relative loudness is preserved."""
    out = np.zeros(n)
    for signal, gain in parts:
        out += gain * signal
    top = np.max(np.abs(out)) if n else 0.0
    if top > peak:
        out *= peak / top
    return out.astype(np.float32)
