"""The static embedding distilled from the packaged MiniLM (structure/static_embed.py): each step
against an independent computation, the cache, and that it keeps MiniLM's sense of similarity."""

from __future__ import annotations

import os

import numpy as np
import pytest

from mteb_stratified.structure import static_embed as se

NAMES = ["breast cancer", "breast tumor", "vitamin d", "heart disease",
         "cardiovascular disease", "apple", "red meat", "processed meat", "omega-3 fatty acid",
         "fish oil", "ÿ-unusual tokens ∑ 42", "a"]


@pytest.fixture(scope="module")
def static():
    pytest.importorskip("sentence_transformers")
    return se.distill(None)


def test_encode_is_the_normalised_mean_of_the_tokenizers_rows(static):
    """Against transformers' own tokenizer (another code path) and a plain numpy mean."""
    from transformers import AutoTokenizer

    from mteb_stratified.structure.sentence_model import resolve_model as _resolve
    tok = AutoTokenizer.from_pretrained(_resolve(None), local_files_only=True)
    got = static.encode(NAMES)
    for text, row in zip(NAMES, got):
        ids = tok(text, add_special_tokens=False)["input_ids"]
        mean = static.vectors[ids].astype(np.float64).mean(axis=0)
        np.testing.assert_allclose(row, mean / np.linalg.norm(mean), rtol=0, atol=2e-7)
    assert got.dtype == np.float32 and got.shape == (len(NAMES), static.dim)


def test_rows_do_not_depend_on_the_batch(static):
    whole = static.encode(NAMES)
    assert np.array_equal(whole, static.encode(NAMES, block=1))
    assert np.array_equal(whole[3:5], static.encode(NAMES[3:5]))
    assert static.encode([]).shape == (0, static.dim)
    assert not static.encode([""]).any()  # no token: the zero vector, not NaN


def test_pca_matches_scikit_learn_up_to_sign():
    from sklearn.decomposition import PCA
    x = np.random.default_rng(0).standard_normal((300, 12)) @ np.diag(np.arange(12, 0, -1.0))
    ours = se._pca(x, 5)
    ref = PCA(n_components=5, svd_solver="full").fit_transform(x)
    for j in range(5):
        sign = np.sign(ours[:, j] @ ref[:, j])
        np.testing.assert_allclose(ours[:, j], sign * ref[:, j], atol=1e-9)
    # the sign rule: each axis' largest-magnitude loading is positive (so runs agree)
    assert np.array_equal(ours, se._pca(x.copy(), 5))


def test_sif_weights_follow_the_formula():
    w = se._sif_weights(5, 1e-4)
    p = np.array([1 / (i + 2) for i in range(5)])
    p /= p.sum()
    np.testing.assert_allclose(w, 1e-4 / (1e-4 + p))
    assert np.all(np.diff(w) > 0)  # rarer (later) tokens weigh more


def test_distillation_is_cached_and_reloads_the_same_bits(static):
    files = os.listdir(se.cache_folder())
    assert f"{static.key[:32]}.npy" in files
    se._LOADED.clear()
    again = se.distill(None)  # from the file this time
    assert again is not static and np.array_equal(again.vectors, static.vectors)
    assert again.key == static.key and again.source["method"] == se.STATIC_METHOD


def test_cache_folder_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("MTEB_STRATIFIED_CACHE", str(tmp_path))
    assert se.cache_folder() == os.path.join(str(tmp_path), "static-embeddings")
    monkeypatch.delenv("MTEB_STRATIFIED_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert se.cache_folder().startswith(str(tmp_path / "xdg"))


def test_it_keeps_minilms_sense_of_similarity(static):
    """Pairs MiniLM finds close stay closer than unrelated ones, and the rank correlation of all
    pairwise cosines with MiniLM's is clearly positive (0.61 on these names when written)."""
    from scipy.stats import spearmanr

    from mteb_stratified.structure.embed import embed_texts
    s, m = static.encode(NAMES[:10]), embed_texts(NAMES[:10])
    sims_s, sims_m = s @ s.T, m @ m.T
    iu = np.triu_indices(10, 1)
    assert spearmanr(sims_s[iu], sims_m[iu]).correlation > 0.4
    assert sims_s[0, 1] > sims_s[0, 5] and sims_s[3, 4] > sims_s[3, 5]


def test_the_model_hash_follows_every_file_that_decides_the_embeddings(tmp_path):
    """A SentencePiece model, a model's own code or ONNX weights change the hash (so a cached
    embedding of the old files is not reused); a README does not."""
    from mteb_stratified.structure.static_embed import _HASHES, model_files_hash

    def hash_of(files: dict) -> str:
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
        _HASHES.pop(str(folder), None)
        return model_files_hash(str(folder))

    base = {"config.json": "{}", "model.safetensors": "w"}
    same = hash_of(base)
    assert hash_of({**base, "README.md": "new words"}) == same
    for name in ("spiece.model", "modeling_custom.py", "model.onnx", "vocab.txt"):
        assert hash_of({**base, name: "x"}) != same, name
