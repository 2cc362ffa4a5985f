"""A user's own data as docs/your_data.md describes it (no tests here): a folder of short clips (some with a
separate audio file), a JSONL of questions in the generic schema and labelled clip lines for the compositional
tasks. Every clip is a real mp4 (a coloured image and a tone), small enough to decode in milliseconds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

# (instrument heard and seen in a question clip, count answer), and the single sound event of an event clip
INSTRUMENTS = (("Violin", "one"), ("Piano", "two"), ("Drum", "three"), ("Flute", "one"), ("Guitar", "two"))
EVENTS = ("Dog", "Car", "Bell", "Rain", "Bird")


def _clip(path: Path, k: int, audio: bool = True, seconds: float = 1.0) -> None:
    from cavpref.media.write import write_mp4

    rng = np.random.default_rng(k)
    frames = np.repeat(rng.integers(0, 256, (1, 32, 32, 3), dtype=np.uint8), round(4 * seconds), axis=0)
    t = np.arange(round(16000 * seconds)) / 16000
    tone = (0.3 * np.sin(2 * np.pi * (220 + 55 * k) * t)).astype(np.float32)
    write_mp4(path, frames, fps=4, audio=tone if audio else None, sample_rate=16000)


def _wav(path: Path, k: int, seconds: float = 1.0) -> None:
    import soundfile as sf

    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(round(16000 * seconds)) / 16000
    sf.write(path, (0.2 * np.sin(2 * np.pi * (330 + 40 * k) * t)).astype(np.float32), 16000)


def lines() -> list[dict]:
    """The JSONL's records: per question clip an options question (answer by index), a counting question
    without options or category (the "How many" prefix rule sets it) and an audio-only question (left out by
    the single-modality filter); the last clip's questions hear a separate audio file; then one clip line per
    event."""
    names = [name for name, _ in INSTRUMENTS]
    out = []
    for k, (name, count) in enumerate(INSTRUMENTS):
        clip = {"video": f"clips/q{k}.mp4", "labels": [name], "dataset": "my_lab"}
        if k == len(INSTRUMENTS) - 1:
            clip["audio"] = f"audio/q{k}.wav"
        options = [name] + [n for n in names if n != name][:3]
        out += [
            {"id": f"q{k}-which", **clip, "question": "Which instrument is playing?", "options": options[::-1],
             "answer": 3, "category": "existential"},
            {"id": f"q{k}-count", **clip, "question": "How many instruments are sounding?", "answer": count},
            {"id": f"q{k}-loud", **clip, "question": "Is it loud?", "answer": "yes", "modality": "audio"},
        ]  # fmt: skip
    out += [{"id": f"e{k}", "video": f"events/e{k}.mp4", "labels": [ev]} for k, ev in enumerate(EVENTS)]
    return out


def write_user_folder(root: Path) -> Path:
    """``root/{clips,audio,events}/`` + ``root/questions.jsonl``; returns the JSONL's path."""
    for k in range(len(INSTRUMENTS)):
        _clip(root / "clips" / f"q{k}.mp4", k, audio=k != len(INSTRUMENTS) - 1)  # its sound is the wav
    _wav(root / "audio" / f"q{len(INSTRUMENTS) - 1}.wav", len(INSTRUMENTS) - 1)
    for k in range(len(EVENTS)):
        _clip(root / "events" / f"e{k}.mp4", 10 + k)
    path = root / "questions.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines()))
    return path
