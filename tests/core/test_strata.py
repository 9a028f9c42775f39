"""Strata: primary cluster, Δ, J (exact and soft), fixed bins, excluded queries, bad input —
brute-force checked on tiny hand-made and random cases."""

from __future__ import annotations


import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.core.strata import (DEFAULT_BINS, Bins, ClusterWeights, QueryStrata,
                                         document_dispersion, soft_containment, stratify,
                                         tie_hash)

WEIGHTS = {
    "d1": {0: 1.0},
    "d2": {1: 0.5, 2: 0.5},
    "d3": {0: 0.25, 1: 0.75},
    "d4": {},                       # a document without entities
    "d7": {0: 0.3},
    "d8": {1: 0.1},
    "d9": {1: 0.2},
}
QRELS = {
    "q1": {"d1": 1},
    "q2": {"d2": 2},
    "q3": {"d1": 1, "d3": 1, "d2": 0},   # d2 judged non-relevant
    "q4": {"d4": 1},                    # relevant docs carry no cluster mass
    "q5": {"d1": 0},                    # no relevant documents
    "q6": {"d2": 1, "d3": 1},
    "q7": {"d7": 1, "d8": 1, "d9": 1},  # 0.3 vs 0.1 + 0.2: a tie up to rounding
}
DOC_ENTS = {"d1": {"a", "b"}, "d2": {"c"}, "d3": {"b", "d"}, "d7": {"x"}, "d8": set(), "d9": {"y"}}
QUERY_ENTS = {"q1": {"a", "z"}, "q2": {"c"}, "q3": set(), "q6": {"e"}, "q7": {"x", "y"}}


def tv(a, b):
    return 0.5 * sum(abs(a.get(c, 0.0) - b.get(c, 0.0)) for c in set(a) | set(b))


def pairwise_delta(profiles):
    """Brute force: the mean TV distance over every unordered pair of profiles (NaN below 2)."""
    n = len(profiles)
    if n < 2:
        return float("nan")
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    return sum(tv(profiles[i], profiles[j]) for i, j in pairs) / len(pairs)


def containment(q, docs):
    if not q:
        return float("nan")
    return sum(len(q & d) / len(q) for d in docs) / len(docs)


def hashed_argmax(prof, key):
    top = max(prof.values())
    tied = [c for c, w in prof.items() if w >= top * (1 - 1e-12)]
    return min(tied, key=lambda c: tie_hash(key, c))


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


def test_tie_break_has_no_size_preference():
    # two clusters tie in every query; cluster 0 is the corpus' big one.  A smallest-id rule
    # sends every query to 0; the hash splits them about evenly.
    weights = {"big": {0: 1.0}, **{f"d{i}": {0: 0.5, 1: 0.5} for i in range(400)}}
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(400)}
    s = stratify(qrels, weights)
    share = float(np.mean(s.primary == 0))
    assert 0.4 < share < 0.6
    # and a document's own stratum follows the same rule
    cw = ClusterWeights.from_dict(weights, 2)
    p = cw.primary()
    assert p[cw.doc_index("big")] == 0
    doc_rows = [cw.doc_index(f"d{i}") for i in range(400)]
    assert p[doc_rows].tolist() == [hashed_argmax(weights[f"d{i}"], f"d{i}") for i in range(400)]
    assert s.primary.tolist() == [hashed_argmax(weights[f"d{i}"], f"q{i}") for i in range(400)]
    np.testing.assert_allclose(cw.primary_share(), np.bincount(p, minlength=2) / 401)


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


def test_bins_fixed_per_corpus_not_per_query_set():
    rng = np.random.default_rng(3)
    C, D = 5, 50
    weights = {f"d{j}": {int(c): float(rng.random()) for c in rng.choice(C, 2, replace=False)}
               for j in range(D)}
    cw = ClusterWeights.from_dict(weights, C)
    ref = document_dispersion(cw)
    assert np.all((ref >= 0) & (ref <= 1))
    bins = Bins.from_reference(dispersion=ref, alignment=rng.random(200), source="docs")
    assert bins.source == "docs"
    assert Bins.from_dict(bins.to_dict()) == bins
    qrels = {f"q{i}": {f"d{j}": 1 for j in rng.choice(D, int(rng.integers(1, 4)), replace=False)}
             for i in range(60)}
    qents = {q: {f"e{int(rng.integers(0, 6))}"} for q in qrels}
    dents = {d: {f"e{int(rng.integers(0, 6))}", f"e{int(rng.integers(0, 6))}"} for d in weights}
    full = stratify(qrels, cw, query_entities=qents, doc_entities=dents, bins=bins)
    # the same queries inside a small, skewed query set: identical cells
    low = [q for q, dl in zip(full.queries, full.dispersion)
           if dl < np.nanmedian(full.dispersion)]
    part = stratify({q: qrels[q] for q in low[:7]}, cw, query_entities=qents, doc_entities=dents,
                    bins=bins)
    for q in part.queries:
        assert part.stratum(q) == full.stratum(q)
    np.testing.assert_array_equal(full.subset(part.queries).codes("cell"), part.codes("cell"))


def test_bin_edges_and_nan():
    b = Bins(dispersion=(0.0, 0.5), alignment=(0.2, 0.5))
    assert b.bin_dispersion([0.0, 1e-9, 0.5, 0.51, np.nan]).tolist() == [0, 1, 1, 2, 3]
    assert b.bin_alignment([0.2, 0.3, 0.9]).tolist() == [0, 1, 2]
    with pytest.raises(InputError):
        Bins(dispersion=(0.6, 0.5))
    with pytest.raises(InputError):
        Bins.from_reference(dispersion=[np.nan])
    assert Bins.from_reference(dispersion=[0, 0, 0, 1, 1, 1]).alignment == DEFAULT_BINS.alignment


def test_soft_containment():
    vec = {"a": np.array([1.0, 0.0]), "c": np.array([0.95, 0.1]), "b": np.array([0.0, 1.0])}
    # a ↔ c match by cosine, b = b by string: both query entities found in the document
    assert soft_containment({"a", "b"}, [{"b", "c"}], vec, tau=0.9) == pytest.approx(1.0)
    # a high τ leaves the exact containment
    assert soft_containment({"a", "b"}, [{"b", "c"}], vec, tau=0.999) == pytest.approx(0.5)
    assert soft_containment({"a", "b"}, [{"b", "c"}], None, tau=0.5) == pytest.approx(0.5)
    # a callable works like a mapping; entities without vectors match by string only
    assert soft_containment({"a", "q"}, [{"c"}], vec.get, tau=0.9) == pytest.approx(1 / 2)
    assert np.isnan(soft_containment(set(), [{"a"}], vec, 0.9))
    # the mean over relevant documents
    assert soft_containment({"a", "b"}, [{"c"}, {"zz"}], vec, 0.9) == pytest.approx(0.25)
    s = stratify({"q": {"d1": 1}}, WEIGHTS, query_entities={"q": {"a", "zz"}},
                 doc_entities={"d1": {"a", "b"}}, entity_vectors={"zz": [0, 1], "b": [0, 1]},
                 tau=0.9)
    assert s.alignment[0] == pytest.approx(1.0)


def test_cluster_weights_forms_and_corpus_mass():
    cw = ClusterWeights.from_dict(WEIGHTS, 3)
    mass = cw.corpus_mass()
    np.testing.assert_allclose(mass, np.array([1.55, 1.55, 0.5]) / 7)
    cw2 = ClusterWeights.from_csr(cw.doc_ids, cw.to_csr())
    np.testing.assert_array_equal(cw2.to_csr().toarray(), cw.to_csr().toarray())
    # weights of documents with entities only, plus the corpus' full id list
    full = ClusterWeights.from_dict({"d1": {0: 1.0}}, 2, doc_ids=["d0", "d1", "d2"])
    assert full.n_docs == 3 and full.corpus_mass() == pytest.approx([1 / 3, 0.0])
    s = stratify({"q": {"d0": 1, "d1": 1}, "r": {"d2": 1}}, full)
    assert s.queries == ("q",) and "no cluster mass" in s.excluded[0].reason
    with pytest.raises(InputError, match="not among doc_ids"):
        ClusterWeights.from_dict({"dX": {0: 1.0}}, 2, doc_ids=["d0"])
    with pytest.raises(InputError, match=r"\[0, 2\)"):
        ClusterWeights.from_dict({"d": {5: 1.0}}, 2)
    with pytest.raises(InputError, match="≥ 0"):
        ClusterWeights.from_dict({"d": {0: -1.0}})


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


def test_dispersion_does_not_depend_on_the_order_of_a_documents_clusters():
    # the same weights, each document's {cluster: weight} in another key order (a freshly built
    # artifact and the same one loaded from disk list them differently): Δ to the last bit
    rng = np.random.default_rng(5)
    weights, shuffled = {}, {}
    for d in range(300):
        clusters = rng.choice(40, size=int(rng.integers(2, 9)), replace=False).tolist()
        w = rng.random(len(clusters))
        weights[f"d{d}"] = dict(zip(clusters, (w / w.sum()).tolist()))
        order = rng.permutation(len(clusters)).tolist()
        shuffled[f"d{d}"] = {clusters[i]: weights[f"d{d}"][clusters[i]] for i in order}
    qrels = {f"q{q}": {f"d{d}": 1 for d in rng.choice(300, size=30, replace=False).tolist()}
             for q in range(50)}
    a = stratify(qrels, ClusterWeights.from_dict(weights, 40)).dispersion
    b = stratify(qrels, ClusterWeights.from_dict(shuffled, 40)).dispersion
    assert a.tobytes() == b.tobytes()


def test_repeated_cut_points_name_the_bins_they_leave_empty():
    from mteb_stratified.core.strata import Bins

    assert Bins().empty_bins() == {} and Bins().empty_bins_warnings() == []
    b = Bins(dispersion=(0.0, 0.0), alignment=(0.1, 0.1, 0.1))
    assert b.empty_bins() == {"dispersion": ["Med"], "alignment": ["Q2", "Q3"]}
    w = b.empty_bins_warnings()
    assert len(w) == 2 and "Med dispersion bin can hold no query" in w[0]
    assert "Q2 and Q3 alignment bins" in w[1]
    assert b.bin_dispersion([0.0, 0.5]).tolist() == [0, 2]  # nothing lands in Med
