"""--drop_stream: the stream ablation that tells whether a model uses the video / the audio at all."""

import json

import pytest

from cavpref.data import BenchmarkItem
from cavpref.eval.pipeline import EvalArgs, load
from cavpref.media.spec import Source, combine, has_audio, has_video, to_json


def _write(path):
    media = [to_json(Source("a.mp4")), to_json(combine(Source("b.mp4"), Source("a.mp4")))]
    with open(path, "w") as f:
        for i, m in enumerate(media):
            item = BenchmarkItem(
                id=f"CLEAN:instruction:{i}",
                task="CLEAN",
                source="music_avqa",
                category="Count",
                question="How many?",
                options={"A": "one", "B": "two"},
                answer="A",
                setting="instruction",
                template_id=0,
                media=m,
            )
            f.write(json.dumps(item.to_row()) + "\n")


@pytest.mark.parametrize("stream", ["video", "audio"])
def test_drop_stream_removes_that_stream_only(tmp_path, stream):
    _write(tmp_path / "test.jsonl")
    args = EvalArgs(
        model="unused",
        data=str(tmp_path / "test.jsonl"),
        output=str(tmp_path / "out"),
        tasks=["CLEAN"],
        drop_stream=stream,
    )
    items = load(args).items
    assert len(items) == 2
    for item in items:
        assert has_video(item.spec) == (stream != "video")
        assert has_audio(item.spec) == (stream != "audio")
    plain = load(
        EvalArgs(model="unused", data=str(tmp_path / "test.jsonl"), output="o", tasks=["CLEAN"])
    ).items
    assert all(has_video(i.spec) and has_audio(i.spec) for i in plain)


def test_drop_stream_rejects_unknown():
    with pytest.raises(ValueError, match="drop_stream"):
        EvalArgs(model="m", data="d", output="o", drop_stream="text")


@pytest.mark.parametrize("kw", [{"drop_stream": "video"}, {"drop_stream": "audio"}, {"text_only": True}])
def test_every_benchmark_gets_the_same_ablations(tmp_path, kw):
    """The ablations are the pipeline's, not AVTrustBench's: an AURA run loads its clips without the
    dropped stream, or without media (text only), and results.json says which input it had."""
    row = {
        "question": "Who plays?",
        "options": {"A": "x", "B": "y"},
        "correct_answer_key": "A",
        "gold_reasoning": "g",
        "video_id": "v1",
        "category": "causal_reasoning",
    }
    (tmp_path / "aura.jsonl").write_text(json.dumps(row) + "\n")
    loaded = load(EvalArgs(benchmark="aura", data=str(tmp_path / "aura.jsonl"), output="o", **kw))
    (item,) = loaded.items
    if kw.get("text_only"):
        assert item.media is None and loaded.loading["input"]["streams"] == "text only (no video, no audio)"
    else:
        dropped = kw["drop_stream"]
        assert has_video(item.spec) == (dropped != "video") and has_audio(item.spec) == (dropped != "audio")
    with pytest.raises(ValueError, match="text_only already drops"):
        EvalArgs(benchmark="aura", data="d", drop_stream="video", text_only=True)
