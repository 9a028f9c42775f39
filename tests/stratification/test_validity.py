"""Validity figures: entity-bootstrap reliability, coverage ceiling and random-document baseline,
partial correlations given |rel|, lexical overlap — on hand-made cases with known answers."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from mteb_stratified.core import ClusterWeights, stratify
from mteb_stratified.stratification.validity import (assignment_reliability,
                                                     coverage_baselines, lexical_overlap,
                                                     partial_correlations)


def _artifact(doc_entities, cluster_of):
    ents = [{"name": n, "cluster": c, "doc_freq": sum(n in v for v in doc_entities.values())}
            for n, c in cluster_of.items()]
    return SimpleNamespace(entities=ents, doc_entities=doc_entities,
                           metadata={"parameters": {"idf_weights": False}})


def _weights(doc_entities, cluster_of, C):
    w = {}
    for d, es in doc_entities.items():
        cs = [cluster_of[e] for e in es if cluster_of.get(e, -1) >= 0]
        if cs:
            w[d] = {c: cs.count(c) / len(cs) for c in set(cs)}
    return ClusterWeights.from_dict(w, C, doc_ids=sorted(doc_entities))


def test_reliability_is_one_for_pure_documents_and_lower_for_mixed_ones():
    pure = {f"d{i}": [f"a{i}", f"b{i}"] for i in range(20)}
    cluster_of = {f"a{i}": i % 3 for i in range(20)} | {f"b{i}": i % 3 for i in range(20)}
    cw = _weights(pure, cluster_of, 3)
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(20)}
    st = stratify(qrels, cw)
    r = assignment_reliability(_artifact(pure, cluster_of), st, qrels, cw, n_resamples=20)
    assert r["cluster"] == 1.0
    # each document split 1:1 between two clusters: a resample moves about half the queries
    mixed_of = {f"a{i}": 0 for i in range(20)} | {f"b{i}": 1 for i in range(20)}
    cw2 = _weights(pure, mixed_of, 2)
    st2 = stratify(qrels, cw2)
    r2 = assignment_reliability(_artifact(pure, mixed_of), st2, qrels, cw2, n_resamples=200,
                                seed=1)
    assert 0.5 < r2["cluster"] < 0.85


def test_coverage_next_to_ceiling_and_random_documents():
    rng = np.random.default_rng(0)
    C, D = 8, 400
    w = {f"d{i}": {int(c): 1.0} for i, c in enumerate(rng.integers(0, C, D))}
    cw = ClusterWeights.from_dict(w, C)
    mass = cw.primary_share()
    # the queries all sit in cluster 0's documents
    zero = [d for d, v in w.items() if 0 in v][:30]
    st = stratify({f"q{i}": {d: 1} for i, d in enumerate(zero)}, cw)
    cov = coverage_baselines(st, cw, mass, n_min=5, n_random=30, seed=0)
    assert cov["msc"] == pytest.approx(1 / C)
    assert cov["ceiling_msc"] == 1.0 and cov["ceiling_scc"] == pytest.approx(1.0)
    assert cov["random_msc"] > cov["msc"] and cov["random_msc"] <= cov["ceiling_msc"]


def test_partial_correlation_removes_what_rel_explains():
    rng = np.random.default_rng(3)
    n_rel = rng.integers(1, 60, 600).astype(float)
    y = -np.log(n_rel) + rng.normal(0, 0.3, 600)          # the outcome follows |rel|
    proxy = np.log(n_rel) + rng.normal(0, 0.3, 600)       # a feature that is only |rel|
    real = rng.normal(0, 1, 600)
    y2 = y + 0.8 * real                                   # a feature with its own effect
    out = partial_correlations({"proxy": proxy}, y, n_rel)["proxy"]
    assert out["rho"] < -0.6 and out["rho_rel"] > 0.8 and abs(out["partial"]) < 0.12
    own = partial_correlations({"real": real, "na": np.full(600, np.nan)}, y2, n_rel)
    assert own["real"]["partial"] > 0.4 and own["real"]["p_partial"] < 1e-6
    assert own["na"]["n"] == 0 and np.isnan(own["na"]["partial"])


def test_lexical_overlap_by_hand():
    corpus = {"d1": {"title": "Statins", "text": "lower cholesterol"},
              "d2": {"title": "", "text": "fish oil"}}
    queries = {"q": "statin cholesterol", "r": "nothing"}
    qrels = {"q": {"d1": 1, "d2": 1}, "r": {"d2": 0}}
    out = lexical_overlap(queries, corpus, qrels, ["q", "r"])
    # q: {statin, cholesterol} vs {statin, lower, cholesterol} = 2/3; vs {fish, oil} = 0
    assert out[0] == pytest.approx((2 / 3 + 0) / 2)
    assert np.isnan(out[1])
