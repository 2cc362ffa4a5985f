"""``encoder_learning_rate``: the trained encoders and projectors get their own step size, the language model
keeps ``learning_rate`` (the optimizer's groups as Trainer builds them, split)."""

from __future__ import annotations

import pytest

from cavpref.models.prepare import prepare_model
from cavpref.trainer.optimizer_groups import encoder_parameter_ids
from tests.helpers.trainer import fresh_model, trainer


def _trained_towers(fx, model_io):
    from cavpref.models import AVModelArguments

    cfg = AVModelArguments(
        model_name_or_path=str(fx["model"]), freeze_vision=False, freeze_audio=False, train_projectors=True
    )
    return prepare_model(fresh_model(fx), cfg, model_io)


def test_encoder_groups_get_their_own_learning_rate(fx, model_io, prefs, tmp_path):
    model = _trained_towers(fx, model_io)
    t = trainer(fx, model_io, prefs, tmp_path, model=model, learning_rate=1e-4, encoder_learning_rate=3e-3)
    opt = t.create_optimizer()
    enc = encoder_parameter_ids(model, (*model_io.vision_modules, *model_io.audio_modules))
    assert enc  # the towers have trainable parameters
    seen = set()
    for group in opt.param_groups:
        ids = {id(p) for p in group["params"]}
        seen |= ids
        assert ids <= enc or not ids & enc  # a group is all encoder or no encoder
        assert group["lr"] == (3e-3 if ids <= enc else 1e-4)
    trainable = {id(p) for p in model.parameters() if p.requires_grad}
    assert seen == trainable  # nothing lost or duplicated by the split
    assert {g["weight_decay"] for g in opt.param_groups} == {t.args.weight_decay, 0.0}


def test_without_it_one_learning_rate_and_a_clear_error_when_nothing_trains(fx, model_io, prefs, tmp_path):
    model = _trained_towers(fx, model_io)
    opt = trainer(fx, model_io, prefs, tmp_path, model=model, learning_rate=1e-4).create_optimizer()
    assert {g["lr"] for g in opt.param_groups} == {1e-4}
    from cavpref.models import AVModelArguments

    frozen_model = prepare_model(  # the defaults: encoders and projectors frozen
        fresh_model(fx), AVModelArguments(model_name_or_path=str(fx["model"])), model_io
    )
    frozen = trainer(
        fx,
        model_io,
        prefs,
        tmp_path / "f",
        model=frozen_model,
        learning_rate=1e-4,
        encoder_learning_rate=1e-3,
    )
    with pytest.raises(ValueError, match="encoder_learning_rate=0.001: no trainable parameter under"):
        frozen.create_optimizer()
