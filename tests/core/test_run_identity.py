"""What defines a run is derived from the configuration classes (cavpref/resume_guard.py): every field of every
class of a ``cavpref train`` recipe is either a key that may change on resume (named with its reason) or a key
that defines the run, and a change of each defining key is refused on resume — a key added later included."""

from __future__ import annotations

import dataclasses

import pytest

from cavpref.resume_guard import LIBRARY_MAY_CHANGE, may_change_on_resume, recipe_differences, run_keys
from cavpref.train import recipe_classes

CLASSES = recipe_classes()
FIELDS = {f.name: cls for cls in CLASSES for f in dataclasses.fields(cls)}


@pytest.mark.parametrize("name", sorted(FIELDS))
def test_every_field_of_every_configuration_class_has_its_class(name):
    """Changed alone between a run and its resume, a field is refused exactly when it defines the run."""
    allowed = may_change_on_resume(CLASSES)
    defines = name in run_keys(CLASSES)
    assert defines != (name in allowed), name
    old = {key: f"value-of-{key}" for key in FIELDS}
    diffs = recipe_differences(old, {**old, name: "changed"}, CLASSES)
    assert (name in diffs) == defines, name


def test_the_allow_list_is_short_named_and_real():
    """Only how long, how often, where to log, this process, batch loading and evaluation may change; every name
    is a field (a renamed library field fails here instead of silently defining nothing)."""
    allowed = may_change_on_resume(CLASSES)
    assert set(allowed) <= set(FIELDS), sorted(set(allowed) - set(FIELDS))
    assert all(reason.strip() for reason in allowed.values())
    assert len(allowed) < len(FIELDS) / 2
    ours = {
        f.name
        for cls in CLASSES
        for f in dataclasses.fields(cls)
        if f.name in vars(cls).get("__annotations__", {})
    }
    assert not (set(LIBRARY_MAY_CHANGE) & ours), (
        "our own fields say it in their class, not in the library list"
    )


def test_keys_once_missing_from_the_hand_kept_list_now_define_the_run():
    keys = set(run_keys(CLASSES))
    for name in (
        "beta_delta",
        "robust_normalizer",
        "encoder_learning_rate",
        "cpu_isa",
        "num_threads",
        "loss_type",
        "loss_weights",
        "label_smoothing",
        "audio_max_seconds",
        "video_max_pixels",
        "missing_stream",
        "skip_bad_rows",
    ):
        assert name in keys, name
    for name in (
        "max_steps",
        "logging_steps",
        "save_steps",
        "report_to",
        "output_dir",
        "resume_from_checkpoint",
        "media_cache_size",
        "feature_cache_size",
    ):
        assert name not in keys, name


def test_a_key_added_later_defines_the_run_by_default():
    from cavpref.config import CAVPrefConfig

    @dataclasses.dataclass
    class Extended(CAVPrefConfig):
        brand_new_knob: float = dataclasses.field(default=1.0, metadata={"help": "a key added tomorrow"})

    classes = (Extended, *CLASSES[1:])
    assert "brand_new_knob" in run_keys(classes)
    assert recipe_differences({"brand_new_knob": 1.0}, {"brand_new_knob": 2.0}, classes) == {
        "brand_new_knob": [1.0, 2.0]
    }
