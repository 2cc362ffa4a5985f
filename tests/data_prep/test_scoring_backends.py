"""The optional scoring backends for real: tiny randomly initialised models built through each library's own
constructors (no weights downloaded), scoring the same clips as the transformers backend.

``open_clip`` is a dev dependency (``pip install 'cavpref[open_clip]'``). ``laion_clap`` pins numpy<2, so it
lives in its own environment (``scripts/laion_clap_env.sh``, docs/scoring.md); its test is skipped where the
package is not importable, and runs offline (local folders named like the hub ids laion_clap loads)."""

import numpy as np
import pytest
import torch

from cavpref.data_prep.scoring import Scorers, ScoringConfig
from cavpref.data_prep.scoring.maths import to_unit_interval
from cavpref.data_prep.scoring.tiny import save_tiny_clap, save_tiny_clip
from tests.helpers.scoring_media import media_set

TEXTS = ["dog", "a piano", "rain on a roof", "speech", "engine", "violin"]


@pytest.fixture(scope="module")
def hf_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("hf")
    return str(save_tiny_clap(root / "clap")), str(save_tiny_clip(root / "clip"))


def test_open_clip_backend_scores_the_same_clips_as_transformers(hf_models, tmp_path):
    open_clip = pytest.importorskip("open_clip")
    from cavpref.data_prep.scoring.tiny import save_tiny_open_clip

    clap, clip = hf_models
    config_json, ckpt = save_tiny_open_clip(tmp_path / "oc")
    common = {"clap_model": clap, "progress": False, "num_frames": 3}
    hf = Scorers(ScoringConfig(clip_model=clip, **common))
    oc = Scorers(
        ScoringConfig(
            clip_backend="open_clip", clip_model=str(config_json), clip_pretrained=str(ckpt), **common
        )
    )
    media = media_set()
    s_hf, s_oc = hf.clip.score(media, TEXTS), oc.clip.score(media, TEXTS)
    for s in (s_hf, s_oc):
        assert s.shape == (6,) and np.isfinite(s).all() and ((0 <= s) & (s <= 1)).all()
        assert s[4] == 0 and (np.delete(s, 4) > 0).all()  # "no-video" scores 0 in both
    assert not np.allclose(s_hf, s_oc)  # two different models, really used
    # the backend is the library: the same number from open_clip's own model, transforms and tokenizer
    model, _, preprocess = open_clip.create_model_and_transforms(config_json.stem, pretrained=str(ckpt))
    model.eval()
    tok = open_clip.get_tokenizer(config_json.stem)
    from PIL import Image

    video = media[0].media.frames  # pre-decoded media: every frame is embedded
    with torch.inference_mode():
        frames = model.encode_image(torch.stack([preprocess(Image.fromarray(f)) for f in video]))
        frames = torch.nn.functional.normalize(frames, dim=-1).mean(0)
        text = torch.nn.functional.normalize(model.encode_text(tok([TEXTS[0]])), dim=-1)[0]
    cos = float(torch.nn.functional.normalize(frames, dim=0) @ text)
    assert s_oc[0] == pytest.approx(float(to_unit_interval(np.array([cos]))[0]), abs=1e-5)
    # and the text-bridged AVSM runs on it
    avsm = oc.avsm.score(media, ["dog", "piano", "rain"])
    assert avsm.shape == (6,) and avsm[4] == 0 and avsm[5] == 0 and (avsm[:4] > 0).all()


def test_laion_clap_backend_scores_the_same_clips_as_transformers(hf_models, tmp_path, monkeypatch):
    import importlib.util

    if importlib.util.find_spec("laion_clap") is None:  # its own env: laion-clap pins numpy<2
        pytest.skip("laion_clap is not importable here (it pins numpy<2: run scripts/laion_clap_env.sh)")
    from cavpref.data_prep.scoring.tiny import save_laion_clap_text_side

    clap, clip = hf_models
    # Offline: laion_clap loads bert-base-uncased / roberta-base / facebook/bart-base by name (three tokenizers
    # at import, the RoBERTa text tower in CLAP_Module); local folders of those names in the working directory
    # (tiny tokenizers, a one-layer random RoBERTa) are taken first, so nothing is looked up on the hub.
    monkeypatch.chdir(save_laion_clap_text_side(tmp_path / "hub"))
    import laion_clap

    torch.manual_seed(0)  # the package's own constructor: a random HTSAT-tiny audio tower, RoBERTa text tower
    module = laion_clap.CLAP_Module(enable_fusion=False, amodel="HTSAT-tiny", tmodel="roberta", device="cpu")
    ckpt = tmp_path / "tiny_laion_clap.pt"
    state = module.model.state_dict()
    # laion_clap's loader deletes this key, which its released checkpoints (older transformers) carry
    state["text_branch.embeddings.position_ids"] = torch.arange(80)[None]
    torch.save({"state_dict": state}, ckpt)
    common = {"clip_model": clip, "progress": False}
    hf = Scorers(ScoringConfig(clap_model=clap, **common))
    lc = Scorers(ScoringConfig(clap_backend="laion_clap", clap_model=str(ckpt), **common))
    media = media_set()
    s_hf, s_lc = hf.clap.score(media, TEXTS), lc.clap.score(media, TEXTS)
    for s in (s_hf, s_lc):
        assert s.shape == (6,) and np.isfinite(s).all() and ((0 <= s) & (s <= 1)).all()
        assert s[5] == 0 and (s[:5] > 0).all()  # "no-audio" scores 0 in both
    assert lc.clap.encoder.sample_rate == 48_000
    assert not np.allclose(s_hf, s_lc)  # two different models, really used
    again = Scorers(ScoringConfig(clap_backend="laion_clap", clap_model=str(ckpt), **common))
    assert np.array_equal(again.clap.score(media, TEXTS), s_lc)  # deterministic, from the saved checkpoint
    # the backend is the library: the same number from the package's own preprocessing and embeddings
    wave = lc.clap.reader.audio(media[0], 48_000).load()  # 1 s: one window, repeat-padded by the package
    audio = module.get_audio_embedding_from_data(x=[wave], use_tensor=False)[0]
    text = module.get_text_embedding([TEXTS[0]], use_tensor=False)[0]
    cos = float(audio @ text / (np.linalg.norm(audio) * np.linalg.norm(text)))
    assert s_lc[0] == pytest.approx(float(to_unit_interval(np.array([cos]))[0]), abs=1e-5)
