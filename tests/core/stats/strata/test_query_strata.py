"""Query strata: primary cluster, Δ, J (exact), cells and codes, excluded queries, bad
input — brute-force checked on tiny hand-made and random cases."""

from __future__ import annotations

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.core.stats.strata.query_strata import QueryStrata, stratify
from mteb_stratified.core.stats.strata.weights import ClusterWeights, tie_hash

from ._cases import (DOC_ENTS, QRELS, QUERY_ENTS, WEIGHTS, containment, hashed_argmax,
                     pairwise_delta, tv)


@pytest.fixture(scope="module")
def strata():
    return stratify(QRELS, WEIGHTS, query_entities=QUERY_ENTS, doc_entities=DOC_ENTS)


def test_hand_made_primary_dispersion_alignment(strata):
    assert strata.queries == ("q1", "q2", "q3", "q6", "q7")
    # q2: clusters 1 and 2 tie at 0.5; q7: 0.3 vs 0.1 + 0.2 tie: both by the hash, not by id
    assert strata.primary[0] == 0 and strata.primary[2] == 0 and strata.primary[3] == 1
    assert strata.primary[1] == min((1, 2), key=lambda c: tie_hash("q2", c))
    assert strata.primary[4] == min((0, 1), key=lambda c: tie_hash("q7", c))
    # Δ: q1, q2 have one relevant document (N/A); q3: TV(d1, d3) = 0.75; q6: TV(d2, d3) = 0.5;
    # q7: d7, d8, d9 pairwise TV: (0.3+0.1)/2... brute force below
    w = WEIGHTS
    expected_delta = [np.nan, np.nan, tv(w["d1"], w["d3"]), tv(w["d2"], w["d3"]),
                      pairwise_delta([w["d7"], w["d8"], w["d9"]])]
    np.testing.assert_allclose(strata.dispersion, expected_delta, rtol=0, atol=1e-12)
    assert strata.dispersion[2] == pytest.approx(0.75)
    # J (mean containment): q1 {a,z} in {a,b} → 1/2; q2 {c} in {c} → 1; q3 ∅ → N/A;
    # q6 {e} → 0; q7 {x,y}: d7 {x} ½, d8 ∅ 0, d9 {y} ½ → 1/3
    np.testing.assert_allclose(strata.alignment, [0.5, 1.0, np.nan, 0.0, 1 / 3])
    assert strata.membership_of("q6") == pytest.approx({0: 0.125, 1: 0.625, 2: 0.25})
    rec = strata.records()
    assert rec["q1"] == {"cluster": 0, "dispersion": None, "dispersion_bin": "N/A",
                         "alignment": pytest.approx(0.5), "alignment_bin": "Med"}
    assert rec["q3"]["alignment"] is None and rec["q3"]["alignment_bin"] == "N/A"
    m = strata.membership.toarray()
    np.testing.assert_allclose(m.sum(axis=1), 1.0)
    np.testing.assert_allclose(m[2], [1.25 / 2, 0.75 / 2, 0.0])
    assert strata.n_clusters == 3


def test_excluded_queries_are_reported_with_reasons(strata):
    reasons = {e.qid: e.reason for e in strata.excluded}
    assert set(reasons) == {"q4", "q5"}
    assert "no relevant documents" in reasons["q5"]
    assert "no cluster mass" in reasons["q4"]
    with pytest.raises(InputError, match="no relevant documents"):
        strata.stratum("q5")


def test_stratum_cells_and_codes(strata):
    # default bins: Δ (0.5, 0.75], J (0.25, 0.5]
    assert strata.stratum("q1") == (0, "N/A", "Med")
    assert strata.stratum("q3") == (0, "Med", "N/A")
    assert strata.stratum("q6") == (1, "Low", "Low")
    codes = strata.codes("cell")
    assert [QueryStrata.decode(c) for c in codes] == strata.labels("cell")
    assert strata.labels("cluster") == [0, 1, 0, 1, 0]
    with pytest.raises(InputError, match="unknown stratum scheme"):
        strata.codes("topic")


def test_relevance_level_changes_rel_set():
    s = stratify({"q": {"d1": 1, "d2": 2}}, WEIGHTS, level=2)
    assert s.primary.tolist() == [min((1, 2), key=lambda c: tie_hash("q", c))]
    assert np.isnan(s.dispersion[0])  # one relevant document at level 2
    assert np.isnan(s.alignment[0])
    with pytest.raises(InputError, match="alignment"):
        s.codes("cell")
    assert s.codes("cluster").tolist() == s.primary.tolist()


def brute_force(qrels, weights, qents, dents, level=1):
    out = {}
    for q, judged in qrels.items():
        rel = [d for d, g in judged.items() if g >= level]
        prof = {}
        for d in rel:
            for c, w in weights[d].items():
                prof[c] = prof.get(c, 0.0) + w
        prof = {c: w for c, w in prof.items() if w > 0}
        if not rel or not prof:
            continue
        with_mass = [weights[d] for d in rel if weights[d]]
        out[q] = (hashed_argmax(prof, q), pairwise_delta(with_mass),
                  containment(qents[q], [dents.get(d, set()) for d in rel]))
    return out


@pytest.mark.parametrize("seed", range(5))
def test_random_cases_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    C, D, Q = 6, 30, 40
    weights = {}
    for j in range(D):
        k = int(rng.integers(0, 4))
        cs = rng.choice(C, size=k, replace=False)
        w = rng.integers(1, 4, size=k).astype(float)   # small integers: real ties happen
        weights[f"d{j}"] = {int(c): float(v / w.sum()) for c, v in zip(cs, w)}
    ents = [f"e{i}" for i in range(12)]
    dents = {f"d{j}": set(rng.choice(ents, size=int(rng.integers(0, 4)), replace=False))
             for j in range(D)}
    qrels, qents = {}, {}
    for i in range(Q):
        docs = rng.choice(D, size=int(rng.integers(1, 5)), replace=False)
        qrels[f"q{i}"] = {f"d{j}": int(rng.integers(0, 3)) for j in docs}
        qents[f"q{i}"] = set(rng.choice(ents, size=int(rng.integers(0, 4)), replace=False))
    s = stratify(qrels, ClusterWeights.from_dict(weights, C), query_entities=qents,
                 doc_entities=dents)
    ref = brute_force(qrels, weights, qents, dents)
    assert list(s.queries) == list(ref)
    assert len(s.queries) + len(s.excluded) == Q
    for i, q in enumerate(s.queries):
        p, delta, j = ref[q]
        assert s.primary[i] == p, q
        assert s.dispersion[i] == pytest.approx(delta, abs=1e-12, nan_ok=True)
        assert s.alignment[i] == pytest.approx(j, nan_ok=True)


def test_bad_input():
    with pytest.raises(InputError, match="different corpus"):
        stratify({"q": {"nope": 1, "d1": 1}}, WEIGHTS)
    skipped = stratify({"q": {"nope": 1, "d1": 1}, "r": {"nope": 1}}, WEIGHTS,
                       unknown_docs="skip")
    assert skipped.queries == ("q",) and skipped.excluded[0].qid == "r"
    assert "no relevant document is in the corpus structure" in skipped.excluded[0].reason
    with pytest.raises(InputError, match="unknown_docs"):
        stratify({"q": {"d1": 1}}, WEIGHTS, unknown_docs="drop")
    with pytest.raises(InputError, match="entity entry"):
        stratify({"q1": {"d1": 1}}, WEIGHTS, query_entities={}, doc_entities=DOC_ENTS)
    with pytest.raises(InputError, match="both"):
        stratify({"q1": {"d1": 1}}, WEIGHTS, query_entities={"q1": set()})
    with pytest.raises(InputError, match="Bins"):
        stratify({"q1": {"d1": 1}}, WEIGHTS, bins=(0, 1))


def test_all_queries_excluded_gives_empty_strata():
    s = stratify({"q": {"d1": 0}}, WEIGHTS)
    assert s.n_queries == 0 and len(s.excluded) == 1
