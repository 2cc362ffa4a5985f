"""The scorers' maths on hand-made embeddings with hand-computed numbers."""

import math

import numpy as np
import pytest

from cavpref.data_prep.scoring import audio_view, video_view
from cavpref.data_prep.scoring import maths as M
from cavpref.media.spec import clip, combine, concat, drop_video, mute, to_json


def test_cosine_and_unit_interval():
    a = np.array([[3.0, 4.0], [1.0, 0.0]])
    b = np.array([[4.0, 3.0], [0.0, 2.0], [-1.0, 0.0]])
    cos = M.cosine_matrix(a, b)
    assert np.allclose(cos, [[24 / 25, 4 / 5, -3 / 5], [4 / 5, 0.0, -1.0]])
    assert np.allclose(M.to_unit_interval(cos), [[0.98, 0.9, 0.2], [0.9, 0.5, 0.0]])
    assert np.allclose(M.paired_cosine(a, b[:2]), [24 / 25, 0.0])


def test_similarity_rows_softmax_and_unit():
    emb = np.array([[1.0, 0.0, 0.0]])
    texts = np.eye(3)
    # scale ln 8: logits (ln 8, 0, 0) -> (8, 1, 1) / 10
    assert np.allclose(M.similarity_rows(emb, texts, math.log(8)), [[0.8, 0.1, 0.1]])
    # unit: (cos + 1) / 2 = (1, .5, .5), divided by sqrt(3)
    assert np.allclose(M.similarity_rows(emb, texts, 1.0, "unit"), [[1.0, 0.5, 0.5]] / np.sqrt(3))
    with pytest.raises(ValueError, match="normalisation"):
        M.similarity_rows(emb, texts, 1.0, "bogus")


def test_text_bridged_tsim_is_the_paper_product():
    s_clip = np.array([[0.9, 0.05, 0.05], [0.1, 0.8, 0.1]])  # visual i vs text j
    s_clap = np.array([[0.9, 0.05, 0.05], [0.2, 0.2, 0.6]])  # audio k vs text j
    t = M.text_bridged_tsim(s_clip, s_clap)
    assert np.allclose(
        t, [[0.815, 0.9 * 0.2 + 0.05 * 0.2 + 0.05 * 0.6], [0.09 + 0.04 + 0.005, 0.02 + 0.16 + 0.06]]
    )
    assert np.allclose(M.paired_tsim(s_clip, s_clap), np.diag(t))
    # both certain of the same label: 1; certain of different labels: 0
    assert M.paired_tsim(np.array([[1.0, 0.0]]), np.array([[1.0, 0.0]]))[0] == 1.0
    assert M.paired_tsim(np.array([[1.0, 0.0]]), np.array([[0.0, 1.0]]))[0] == 0.0
    with pytest.raises(ValueError, match="texts"):
        M.text_bridged_tsim(np.ones((1, 2)), np.ones((1, 3)))


def test_tsim_unit_norm_is_mean_of_products_in_unit_range():
    v = M.similarity_rows(np.array([[1.0, 0.0]]), np.eye(2), 1.0, "unit")  # per-text (1, .5)
    a = M.similarity_rows(np.array([[0.0, 1.0]]), np.eye(2), 1.0, "unit")  # per-text (.5, 1)
    assert np.allclose(M.paired_tsim(v, a), [(1 * 0.5 + 0.5 * 1) / 2])


def test_mean_embedding_normalises_frames_first():
    frames = np.array([[10.0, 0.0], [0.0, 1.0]])  # unit: (1,0), (0,1) -> mean (.5,.5) -> (1,1)/sqrt2
    assert np.allclose(M.mean_embedding(frames), [1 / math.sqrt(2)] * 2)


def test_window_starts():
    assert M.window_starts(50, 100, 6) == [0]
    assert M.window_starts(100, 100, 6) == [0]
    assert M.window_starts(250, 100, 6) == [0, 75, 150]  # ceil(2.5) = 3 windows over [0, 150]
    assert M.window_starts(1000, 100, 3) == [0, 450, 900]  # capped at 3
    assert M.window_starts(250, 100, 1) == [75]  # one window: the centre


def test_delta_and_keep_mask():
    assert M.score_delta(0.75, 0.25) == 0.5
    assert M.score_delta(0.75, None) == 0.75  # missing stream scores 0
    assert M.score_delta(None, None) == 0.0
    assert M.keep_mask([0.69, 0.70, 0.71], 0.70).tolist() == [False, True, True]


def test_stream_views_share_keys_across_perturbations():
    a, b = clip("a.mp4", 0, 10), clip("b.mp4", 0, 10)
    mvit = combine(b, a)  # video of B, audio of A
    assert to_json(audio_view(mvit)) == to_json(audio_view(a)) == to_json(drop_video(a))
    assert to_json(video_view(mvit)) == to_json(video_view(b)) == to_json(mute(b))
    assert audio_view(mute(a)) is None and video_view(drop_video(a)) is None
    stitched = concat(a, b)
    assert to_json(audio_view(stitched)) == to_json(drop_video(stitched))
    # A's audio under a video of another length is trimmed / padded by the decoder: its own key
    for other in (clip("b.mp4", 0, 5), clip("b.mp4")):
        mixed = combine(other, a)
        assert to_json(audio_view(mixed)) == to_json(drop_video(mixed)) != to_json(audio_view(a))


def test_config_vocabulary_and_validation(tmp_path):
    from cavpref.data_prep.scoring import ScoringConfig

    (tmp_path / "labels.txt").write_text("dog\n\ncat\npiano\n", encoding="utf-8")
    cfg = ScoringConfig(vocabulary=["piano", "violin"], vocabulary_file=str(tmp_path / "labels.txt"))
    assert cfg.load_vocabulary() == ["piano", "violin", "dog", "cat"]  # list first, file next, de-duplicated
    assert ScoringConfig().load_vocabulary() is None
    with pytest.raises(FileNotFoundError, match="vocabulary_file"):
        ScoringConfig(vocabulary_file=str(tmp_path / "missing.txt")).load_vocabulary()
    with pytest.raises(ValueError, match="tsim_norm"):
        ScoringConfig(tsim_norm="max")
    assert ScoringConfig(num_frames=4).frame_policy.num_frames == 4


def test_inner_products_do_not_depend_on_how_many_rows_are_scored_together():
    """A prep shard scores fewer rows than the one-process build: every entry must be the same bits either way
    (BLAS's ``a @ b.T`` blocks by size and differs in the last bit for every row of this example)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((200, 64)), rng.standard_normal((12, 64))
    full = M.inner_products(a, b)
    assert all(np.array_equal(full[i], M.inner_products(a[i : i + 1], b)[0]) for i in range(200))
    assert all(np.array_equal(full[i : i + 7], M.inner_products(a[i : i + 7], b, chunk=64)) for i in (0, 93))
    np.testing.assert_allclose(full, a @ b.T, rtol=0, atol=1e-12)
