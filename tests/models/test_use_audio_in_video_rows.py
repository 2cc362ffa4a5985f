"""A per-row ``use_audio_in_video`` (issue 55 part 2): the preference row's column reaches the model I/O, which
lays out, positions and generates each row with its own flag (Qwen2.5-Omni interleaves a video's audio tokens
with its frames by time when it is on), and the data import / export carry it (ms-swift's own column, a
``cavpref_*`` column elsewhere)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from datasets import load_from_disk

from cavpref.bench.rows import write_clips
from cavpref.collator import CAVPrefCollator
from cavpref.data import PreferenceExample
from cavpref.data_prep.formats import ExportArgs, ImportArgs, export_dataset, import_dataset
from cavpref.media.spec import Source, to_json
from cavpref.models import Row, load_model_io
from cavpref.models.tiny import build_tiny_qwen_omni, demo_media

pytestmark = pytest.mark.usefixtures("one_thread")
Q = "What plays?"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return str(build_tiny_qwen_omni(tmp_path_factory.mktemp("uaiv") / "tiny"))


def _row_inputs(batch: dict, r: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(input_ids, position ids) of row ``r`` without its padding."""
    keep = batch["attention_mask"][r].bool()
    return batch["input_ids"][r][keep], batch["position_ids"][:, r][:, keep]


def test_rows_of_both_flags_in_one_batch_match_each_row_alone(tiny):
    media = demo_media(1, seconds=2.0, num_frames=4)
    on = load_model_io(tiny, dtype="float32", use_audio_in_video=True)
    off = load_model_io(tiny, dtype="float32", use_audio_in_video=False)
    off.model = on.model
    mixed = load_model_io(tiny, dtype="float32", use_audio_in_video=False)  # the recipe says off
    mixed.model = on.model
    # one clip, one media_key: only the rows' flags differ
    rows = [
        Row(Q, "A piano.", media, "clip", "r_on", use_audio_in_video=True),
        Row(Q, "A piano.", media, "clip", "r_off", use_audio_in_video=False),
        Row(Q, "A drum.", media, "clip", "r_default"),  # None: the recipe's flag (off)
    ]
    got = mixed.collate(rows)
    want = [on.collate([Row(Q, "A piano.", media, "clip")]), off.collate([Row(Q, "A piano.", media, "clip")])]
    want.append(off.collate([Row(Q, "A drum.", media, "clip")]))
    assert got["row_interleaved"].tolist() == [True, False, False]
    for r, alone in enumerate(want):
        ids, pos = _row_inputs(got, r)
        ids_alone, pos_alone = _row_inputs(alone, 0)
        assert torch.equal(ids, ids_alone), rows[r].row_id
        assert torch.equal(pos, pos_alone), rows[r].row_id
    assert not torch.equal(_row_inputs(got, 0)[0], _row_inputs(got, 1)[0])  # the flag changes the layout
    with torch.no_grad():
        mixed_logps = mixed.logps(on.model, got)
        alone_logps = torch.cat([io.logps(on.model, b) for io, b in zip((on, off, off), want)])
    torch.testing.assert_close(mixed_logps, alone_logps, rtol=1e-4, atol=1e-4)
    # generation: each row with its own flag, as alone
    kw = {"max_new_tokens": 3}
    gen = mixed.generate(on.model, rows[:2], **kw)
    assert gen == [on.generate(on.model, [rows[0]], **kw)[0], off.generate(on.model, [rows[1]], **kw)[0]]


def test_the_collator_hands_the_rows_column_to_the_model_io(tiny):
    io = load_model_io(tiny, dtype="float32", use_audio_in_video=False)
    spec = to_json(Source("a.mp4"))
    examples = [
        PreferenceExample(
            f"e{flag}", "CLEAN", "t", "", Q, spec, "A piano.", "A drum.", use_audio_in_video=flag
        ).to_row()
        for flag in (True, False, None)
    ]
    collator = CAVPrefCollator(io, {"CLEAN": (0, 0)}, method="dpo", decode=lambda _: demo_media(1))
    batch = collator(examples)["model_inputs"]
    # y_w and y_l of each example: its own flag, None the recipe's (off)
    assert batch["row_interleaved"].tolist() == [True, True, False, False, False, False]


def _swift(media: Path) -> Path:
    a = str(media / "a.mp4")
    msg = [{"role": "user", "content": f"<video>{Q}"}, {"role": "assistant", "content": "A piano."}]
    rows = [
        {"messages": msg, "rejected_response": "A drum.", "videos": [a], "use_audio_in_video": flag}
        for flag in (True, False, None)
    ]
    path = media / "flags.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_import_export_round_trip_keeps_the_column(tmp_path):
    write_clips(tmp_path)
    import_dataset(ImportArgs(format="swift", files=[str(_swift(tmp_path))], output_dir=str(tmp_path / "in")))
    rows = list(load_from_disk(str(tmp_path / "in" / "preferences"))["train"])
    assert [r["use_audio_in_video"] for r in rows] == [True, False, None]
    for fmt in ("swift", "llamafactory", "trl"):
        out = tmp_path / f"out_{fmt}"
        export_dataset(
            ExportArgs(format=fmt, data=str(tmp_path / "in"), output_dir=str(out), media_root=str(tmp_path))
        )
        written = [json.loads(x) for x in (out / "cavpref_train.jsonl").read_text().splitlines()]
        column = "use_audio_in_video" if fmt == "swift" else "cavpref_use_audio_in_video"
        assert [w.get(column) for w in written] == [True, False, None], fmt
        if fmt == "swift":
            assert "cavpref_use_audio_in_video" not in written[0]
        back = tmp_path / f"back_{fmt}"
        import_dataset(ImportArgs(format=fmt, files=[str(out / "cavpref_train.jsonl")], output_dir=str(back)))
        again = list(load_from_disk(str(back / "preferences"))["train"])
        assert [r["use_audio_in_video"] for r in again] == [True, False, None], fmt
        assert [{k: v for k, v in r.items() if k != "id"} for r in again] == [
            {k: v for k, v in r.items() if k != "id"} for r in rows
        ], fmt
