"""cavpref_lab.science.probe_where: the slot probe tells a vision tower that cannot place an entity from one that can."""

from cavpref.apps.quickstart import QuickstartConfig
from cavpref_lab.science import probe_where as probe


def test_background_ramp_gives_the_entity_token_its_slot(tmp_path):
    """At 84 px an entity sits centred in its own video token: on a uniform background the random tower's
    token is the same in every slot (RoPE only, no absolute position); the background ramp makes it differ."""
    from cavpref.models import build_tiny_qwen_omni, load_model_io

    path = build_tiny_qwen_omni(tmp_path / "tiny", frame_pixels=84 * 84, vision_hidden_size=64)
    io = load_model_io(str(path), dtype="float32", num_frames=4, frame_height=84, frame_width=84)
    flat = probe.slot_similarity(io, QuickstartConfig(preset="small", frame_size=84, num_frames=4))
    lit = probe.slot_similarity(
        io, QuickstartConfig(preset="small", frame_size=84, num_frames=4, background_ramp=40)
    )
    assert len(flat) == len(lit) == 3
    assert min(flat) > 0.99, flat
    assert max(lit) < min(flat) and min(lit) < 0.98, (flat, lit)
