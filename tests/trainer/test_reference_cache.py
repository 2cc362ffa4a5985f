"""The reference log-prob cache is keyed by everything its values depend on besides the data and the weights: every
field of the collator and every setting the model I/O reports (``AVModelIO.settings()``: its constructor options,
derived from the class, and its processor's configuration). Each changed setting gives a new entry; the issue's
case — two runs differing only in ``audio_max_seconds`` under one ``ref_cache_dir`` — gets two."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from cavpref.collator import CAVPrefCollator
from cavpref.loss import DEFAULT_SWITCHES
from cavpref.trainer.reference import cache_key
from tests.helpers import trainer_fixtures as F


def other(value):
    """A different value of the same kind."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + " (changed)"
    if value is None:
        return 1
    if isinstance(value, dict):
        return {**value, "changed": 1}
    return [value]


def collator(model_io, **kw):
    return CAVPrefCollator(model_io, DEFAULT_SWITCHES, method="all", calibrated=(), **kw)


def test_every_model_io_setting_is_in_the_key(model_io):
    settings = model_io.settings()["options"]
    # the Qwen model I/O's media budgets and prompt options, found without a list
    assert {
        "audio_max_seconds",
        "video_max_pixels",
        "video_fps",
        "system_prompt",
        "use_audio_in_video",
    } <= set(settings)
    base = cache_key("data", "weights", collator(model_io))
    for name, value in settings.items():
        changed = copy.copy(model_io)
        setattr(changed, name, other(value))
        assert cache_key("data", "weights", collator(changed)) != base, name


def test_every_collator_field_and_the_processor_are_in_the_key(model_io):
    col = collator(model_io, frames=None, media_root="media")
    base = cache_key("data", "weights", col)
    for f in dataclasses.fields(col):
        if f.name in ("model_io", "decode"):
            continue
        value = {"anchor": "chosen"}.get(f.name, other(getattr(col, f.name)))  # a field with a closed choice
        changed = dataclasses.replace(col, **{f.name: value})
        assert cache_key("data", "weights", changed) != base, f.name
    assert cache_key("data", "weights", dataclasses.replace(col, decode=lambda spec: spec)) != base
    io = copy.copy(model_io)
    io.processor = copy.deepcopy(model_io.processor)
    io.processor.video_processor.temporal_patch_size += 1  # a processor setting no model I/O option names
    assert cache_key("data", "weights", dataclasses.replace(col, model_io=io)) != base
    assert cache_key("other data", "weights", col) != base and cache_key("data", "other weights", col) != base


def test_runs_of_every_method_on_the_same_data_share_one_entry(model_io):
    """The precompute pass scores every row the data has whatever the switches' (η, γ): a DPO run (switches all
    zero) and a CAVPref run read the same entry; a run with another task table does not."""
    from cavpref.trainer.reference import every_row

    def key(col):
        return cache_key("data", "weights", every_row(col))

    dpo = CAVPrefCollator(model_io, dict.fromkeys(DEFAULT_SWITCHES, (0, 0)), method="dpo")
    cavpref = CAVPrefCollator(model_io, DEFAULT_SWITCHES, method="cavpref", calibrated=("y",))
    assert dpo.switches != cavpref.switches and key(dpo) == key(cavpref)
    fewer = dict(list(DEFAULT_SWITCHES.items())[:-1])
    assert key(CAVPrefCollator(model_io, fewer, method="cavpref")) != key(cavpref)


def test_a_model_io_that_hides_an_option_fails_naming_it(model_io):
    from cavpref.models.qwen_omni import QwenOmniModelIO

    class Hidden(QwenOmniModelIO):
        def __init__(self, processor, *, secret_budget: int = 3, **kw):
            super().__init__(processor, **kw)
            self._budget = secret_budget

    hidden = copy.copy(model_io)
    hidden.__class__ = Hidden
    with pytest.raises(AttributeError, match="'secret_budget' is not kept as self.secret_budget"):
        hidden.settings()


def test_runs_differing_only_in_the_audio_budget_get_their_own_reference_cache(fx, tmp_path):
    """Issue 39's reproduction: audio_max_seconds 4 vs 2, one ref_cache_dir. Before, both runs shared one entry
    (the second trained against the first one's reference log-probs)."""
    from datasets import load_from_disk

    from cavpref.models import AVModelArguments, load_model_io
    from tests.helpers.trainer import trainer

    data = load_from_disk(str(fx["prefs"])).select(range(2))
    F.write_clips(
        tmp_path / "media", seconds=3.0
    )  # 3-s clips: a 2-s budget cuts their audio, a 4-s one does not
    fx = {**fx, "media": tmp_path / "media"}
    shared = tmp_path / "ref_cache"
    columns = {}
    for seconds in (4.0, 2.0, 4.0):
        io = load_model_io(
            AVModelArguments(model_name_or_path=str(fx["model"]), dtype="float32", audio_max_seconds=seconds)
        )
        tr = trainer(
            fx, io, data, tmp_path / f"run{seconds}", precompute_ref_log_probs=True, ref_cache_dir=str(shared)
        )
        columns.setdefault(seconds, tr.train_dataset["ref_y_w"])
        assert (
            tr.train_dataset["ref_y_w"] == columns[seconds]
        )  # the third run reads the first one's entry back
    assert len([p for p in shared.iterdir() if p.name.startswith("train-")]) == 2
    assert columns[4.0] != columns[2.0]  # the budgets give other reference log-probs: sharing would be wrong
