"""Generic-phrase test (RIDF), idf weights, and the cluster quality figures (NPMI, ARI, generic
mass share) — checked by hand and against scikit-learn, on toy and on the real NFCorpus texts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mteb_stratified.structure.quality import adjusted_rand, cluster_quality
from mteb_stratified.structure.specificity import GenericTest, WordStats, idf, word_tokens
from mteb_stratified.structure.weights import doc_cluster_weights, stratum_weights


def test_ridf_by_hand():
    texts = ["alpha alpha alpha beta", "alpha beta", "gamma beta", "delta"]
    st = WordStats.of_texts(texts)
    assert st.doc_freq["alpha"] == 2 and st.coll_freq["alpha"] == 4
    lam = 4 / 4
    assert st.ridf("alpha") == pytest.approx(math.log2(4 / 2) + math.log2(1 - math.exp(-lam)))
    # beta: once in each of 3 documents: less bursty than alpha
    assert st.ridf("beta") < st.ridf("alpha")
    assert st.ridf("missing") == math.inf
    assert word_tokens("Breast Cancers, IL-2s!") == ["breast", "cancer", "il-2"]


def test_generic_phrases_need_every_word_generic():
    # "increase" occurs once in many documents (generic); "statin" recurs inside few (topical)
    texts = [f"an increase was seen in study {i}" for i in range(40)]
    texts += ["statin statin statin therapy", "statin statin users"] * 3
    test = GenericTest(WordStats.of_texts(texts), max_ridf=0.7, min_doc_share=0.05)
    assert test.is_generic("increase")
    assert test.is_generic("substantial increase") is False  # "substantial" is unseen
    assert not test.is_generic("statin")
    assert not test.is_generic("statin increase")
    assert not test.is_generic("")


def test_real_nfcorpus_words(nfcorpus_texts):
    test = GenericTest(WordStats.of_texts(nfcorpus_texts))
    for name in ("substantial increase", "essential role", "positive effect", "evidence"):
        assert test.is_generic(name), name
    for name in ("breast cancer", "statin", "vitamin d", "soy", "arsenic"):
        assert not test.is_generic(name), name


def test_idf_weighted_doc_weights_and_stratum_weights():
    doc_entities = {"d1": {"a", "b"}, "d2": {"a"}, "d3": {"c"}, "d4": set()}
    cluster = {"a": 0, "b": 1, "c": 1}
    df = {"a": 2, "b": 1, "c": 1}
    w = doc_cluster_weights(doc_entities, cluster, df, 4)
    ia, ib = idf(2, 4), idf(1, 4)
    assert w["d1"] == pytest.approx({0: ia / (ia + ib), 1: ib / (ia + ib)})
    assert w["d2"] == {0: 1.0} and "d4" not in w
    mass, own = stratum_weights(w, ["d1", "d2", "d3", "d4"], 2)
    assert own == {"d1": 1, "d2": 0, "d3": 1}       # d1: b is rarer than a
    assert mass == pytest.approx({0: 0.25, 1: 0.5})  # d4 counts in |D|, in no cluster


@pytest.mark.parametrize("seed", range(4))
def test_adjusted_rand_equals_sklearn(seed):
    from sklearn.metrics import adjusted_rand_score

    rng = np.random.default_rng(seed)
    a = rng.integers(0, 6, 200)
    b = np.where(rng.random(200) < 0.7, a, rng.integers(0, 6, 200))
    assert adjusted_rand(a, b) == pytest.approx(adjusted_rand_score(a, b))
    assert adjusted_rand(a, a) == pytest.approx(1.0)


def test_cluster_quality_counts_generic_clusters_by_weight():
    texts = {f"d{i}": f"an increase and a role in study {i}" for i in range(30)}
    texts.update({f"s{i}": "statin statin statin therapy therapy" for i in range(3)})
    clusters = [{"id": 0, "label": "increase / role", "mass": 0.6,
                 "top_entities": ["increase", "role"], "terms": ["increase", "role"]},
                {"id": 1, "label": "statin", "mass": 0.2,
                 "top_entities": ["statin", "statin therapy"],
                 "terms": ["statin", "statin therapy"]}]
    doc_entities = {d: ({"increase", "role"} if d.startswith("d") else {"statin",
                                                                        "statin therapy"})
                    for d in texts}
    entities = [{"name": "increase", "cluster": 0, "doc_freq": 30},
                {"name": "role", "cluster": 0, "doc_freq": 30},
                {"name": "statin", "cluster": 1, "doc_freq": 3},
                {"name": "statin therapy", "cluster": 1, "doc_freq": 3},
                {"name": "loose", "cluster": -1, "doc_freq": 9}]
    from mteb_stratified.structure.terms import term_counts

    q = cluster_quality(clusters, entities, doc_entities, texts,
                        term_counts=term_counts(texts))
    assert q["generic_mass_share"] == pytest.approx(0.6 / 0.8)
    assert q["heaviest"][0]["generic"] is True and q["heaviest"][1]["generic"] is False
    # each pair always co-occurs: the terms' and the old labels' NPMI are 1
    assert q["npmi_weighted"] == pytest.approx(1.0)
    assert q["labels_before"]["npmi_weighted"] == pytest.approx(1.0)
    assert q["levels"]["0"]["grab_bag_mass_share"] == 0.0
