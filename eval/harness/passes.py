"""What both harness exports share: every pass a benchmark asks, and its media as plain files.

A pass is what ``cavpref eval prompts`` writes (the benchmark's ``request``: AVTrustBench's CircularEval
rotations with the prompt rendered by ``cavpref.prompts``), so a harness asks the model exactly what
``cavpref eval`` asks. The harnesses take a file path per stream, not a MediaSpec, so each distinct spec
becomes files once (``MediaFiles``): a whole source file is named where it lies; anything else (MAT's
muted video, MVT's audio alone, a stitched or swapped clip) is written out with ``cavpref.media`` —
an mp4 holding exactly the streams the spec keeps, or a 16 kHz WAV when only audio is left — because a
harness's Qwen2.5-Omni reads whatever track the file has (lmms-eval feeds a video's audio whenever the file
has one), so a source file with its sound track would leak the stream MAT removed.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from cavpref.eval import registry
from cavpref.eval.args import EvalArgs
from cavpref.media.spec import Source, from_json, has_audio, has_video, resolve_path

HARNESSES = ("lmms_eval", "vlmevalkit")
SAMPLE_RATE = 16000  # the rate cavpref decodes audio at (EvalArgs.sample_rate's default)


@dataclass
class Pass:
    """One question as asked: the item, its pass index, the prompt and the options as this pass shows them."""

    item: object  # BenchmarkItem
    k: int
    prompt: str
    options: dict[str, str]
    answer: str | None
    abstain_letter: str | None
    video: str  # absolute path of the file holding the pass's video (with its audio, where it keeps audio)
    audio: str  # absolute path of a WAV: the audio of a spec without video (or of every spec, separate_audio)

    def row(self) -> dict:
        """The fields every export writes (strings, so a JSON / TSV reader infers one type per column)."""
        it = self.item
        return {
            "id": it.id,
            "pass": self.k,
            "task": it.task,
            "setting": it.setting,
            "source": it.source,
            "category": it.category,
            "record": str((it.meta or {}).get("record") or ""),
            "question": it.question,
            "prompt": self.prompt,
            "options": json.dumps(self.options, ensure_ascii=False),
            "answer": self.answer or "",
            "abstain_letter": self.abstain_letter or "",
            "video": self.video,
            "audio": self.audio,
        }


class MediaFiles:
    """Media specs -> files under ``out/media`` (one per distinct spec; whole source files are not copied).
    ``separate_audio`` (VLMEvalKit, whose audio-visual datasets send the sound as its own WAV beside the
    video, WorldSense's layout): every spec that keeps audio also gets a WAV of it."""

    def __init__(self, root: str, out: Path, *, separate_audio: bool = False):
        self.root, self.dir, self.separate_audio = root, out / "media", separate_audio
        self.done: dict[str, tuple[str, str]] = {}
        self.written = 0

    def files(self, spec_json: str) -> tuple[str, str]:
        """(video file, audio file) for the spec; ("", "") for a text-only item."""
        if spec_json not in self.done:
            self.done[spec_json] = self._write(spec_json)
        return self.done[spec_json]

    def _name(self, spec_json: str, suffix: str) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        self.written += 1
        return self.dir / (hashlib.sha256(spec_json.encode()).hexdigest()[:16] + suffix)

    def _wav(self, spec, spec_json: str) -> str:
        import soundfile as sf

        from cavpref.media.decode import decode

        path = self._name(spec_json, ".wav")
        sf.write(path, decode(spec, self.root, frames=None, sample_rate=SAMPLE_RATE).audio, SAMPLE_RATE)
        return str(path.resolve())

    def _write(self, spec_json: str) -> tuple[str, str]:
        from cavpref.media.probe import probe

        spec = from_json(spec_json)
        if not (has_video(spec) or has_audio(spec)):
            return "", ""
        if not has_video(spec):
            return "", self._wav(spec, spec_json)
        if isinstance(spec, Source) and spec.start == 0 and spec.end is None:
            video = resolve_path(self.root, spec.path)
            if not probe(video).has_video:
                return "", self._wav(spec, spec_json)
            video = str(video)
        else:
            from cavpref.media.materialize import materialize

            path = self._name(spec_json, ".mp4")
            materialize(spec, self.root, path, sample_rate=SAMPLE_RATE)
            video = str(path.resolve())
        return video, self._wav(spec, spec_json) if self.separate_audio and has_audio(spec) else ""


def load_passes(
    args: EvalArgs, options, out: Path, *, separate_audio: bool = False
) -> tuple[registry.Benchmark, list[Pass], dict]:
    """(benchmark, every pass of the selected items in item order, what was loaded): the items read as
    ``cavpref eval`` reads them (``--tasks``, ``--setting``, ``--limit``), their media written under ``out``."""
    from cavpref.eval.pipeline import load

    bench = registry.create(args, options)
    loaded = load(args, bench=bench)
    media = MediaFiles(loaded.media_root, out, separate_audio=separate_audio)
    passes = list(_passes(bench, loaded.items, media))
    info = {
        "items": len(loaded.items),
        "passes": len(passes),
        "media_files_written": media.written,
        "media_root": str(Path(loaded.media_root).resolve()),
    }
    return bench, passes, info


def _passes(bench, items, media: MediaFiles) -> Iterator[Pass]:
    for item in items:
        video, audio = media.files(item.media)
        for k in range(bench.n_passes(item)):
            req = bench.request(item, k)
            info = req.info or {}
            yield Pass(
                item,
                k,
                req.prompt,
                dict(info.get("options", item.options)),
                info.get("answer", item.answer),
                info.get("abstain_letter", item.abstain_letter),
                video,
                audio,
            )


def export_config(args: EvalArgs, options, bench, harness: str, info: dict) -> dict:
    """export.json: what the export was made from, and the keys that score it again (the benchmark, its
    options, the data) — the lmms-eval task's metrics rebuild the benchmark from it."""
    from dataclasses import asdict, is_dataclass

    from cavpref.redact import public_config

    opts = public_config(asdict(bench.opt)) if is_dataclass(bench.opt) else {}
    return {
        "format": "cavpref-harness-export/v1",
        "harness": harness,
        "benchmark": bench.name,
        "data": str(Path(args.data).resolve()),
        "tasks": list(args.tasks),
        "limit": args.limit,
        "options": opts,
        **info,
    }
