"""The evaluated strata (the cluster tree cut at --min-queries), the paired summary and J next
to lexical containment, on the bundled NFCorpus structure."""

import json

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.stratification import evaluated_strata, paired_summary, stratified_summary
from mteb_stratified.stratification.grain import cell_strata


def test_every_evaluated_stratum_holds_min_queries(strata, artifact):
    for m in (1, 5, 10, 20):
        ev = evaluated_strata(strata, artifact, min_queries=m)
        sizes = np.bincount(ev.strata.primary, minlength=ev.n_strata)
        assert sizes.sum() == strata.n_queries
        assert (sizes >= m).all() and sizes.tolist() == ev.cut.n_queries.tolist()
        # weights: each fine cluster's mass in exactly one stratum
        mass = np.array([artifact.cluster_mass[c] for c in range(artifact.n_clusters)])
        assert ev.weights.sum() == pytest.approx(mass.sum())
        # a query's evaluated stratum holds its fine cluster
        assert (ev.cut.stratum[strata.primary] == ev.strata.primary).all()
    one = evaluated_strata(strata, artifact, min_queries=1)
    assert one.n_strata >= len(set(strata.primary.tolist()))   # the fine clusters themselves


def test_fewer_queries_than_min_queries_is_one_stratum_and_says_so(strata, artifact,
                                                                   two_systems):
    ev = evaluated_strata(strata, artifact, min_queries=10_000)
    assert ev.cut.short and ev.n_strata == 1
    block = stratified_summary(two_systems["A"], strata, artifact, min_queries=10_000,
                               n_resamples=20).to_dict()
    assert block["heterogeneity"] is None and block["power"] is None
    assert any("fewer than --min-queries" in w for w in block["warnings"])


def test_levels_and_bad_grain_settings(strata, artifact):
    top = artifact.cluster_tree.n_levels - 1
    ev = evaluated_strata(strata, artifact, min_queries=1, level=top)
    assert ev.n_strata == 1
    with pytest.raises(InputError, match=rf"levels 0\.\.{top}"):
        evaluated_strata(strata, artifact, level=top + 1)
    for m in (0, -3, 2.5):
        with pytest.raises(InputError, match="integer ≥ 1"):
            evaluated_strata(strata, artifact, min_queries=m)


def test_cell_strata_pool_small_cells(strata, artifact):
    ev = evaluated_strata(strata, artifact, min_queries=10)
    labels, weights = cell_strata(ev)
    sizes = {}
    for lab in labels:
        sizes[lab] = sizes.get(lab, 0) + 1
    assert min(sizes.values()) >= 10
    assert sum(weights.values()) == pytest.approx(ev.weights[np.unique(ev.strata.primary)].sum())


def test_the_paired_summary(strata, artifact, two_systems):
    p = paired_summary(two_systems, strata, artifact, min_queries=10, n_resamples=200)
    json.dumps(p.to_dict())
    (pair,) = p.pairs
    a = np.array([two_systems["A"]["expected"][q] for q in strata.queries])
    b = np.array([two_systems["B"]["expected"][q] for q in strata.queries])
    assert pair.overall.mean_difference == pytest.approx((a - b).mean())
    assert pair.tested and 0 < pair.heterogeneity.p_value <= 1
    rows = pair.stratum_differences.strata
    assert sum(r.n for r in rows) == strata.n_queries
    assert all(r.winner in (None, "A", "B") for r in rows)
    assert pair.power.test == "paired_max_z"
    one = paired_summary({"A": two_systems["A"]}, strata, artifact)
    assert one.pairs == () and "one system" in one.note


def test_a_planted_stratum_gap_is_found_and_named(strata, artifact, two_systems):
    """B made better by 0.5 in one evaluated stratum: the sign-flip test names B there."""
    ev = evaluated_strata(strata, artifact, min_queries=10)
    target = int(np.bincount(ev.strata.primary).argmax())
    qs = [q for q, s in zip(strata.queries, ev.strata.primary.tolist()) if s == target]
    a = two_systems["A"]["expected"]
    b = dict(a)
    for q in qs:
        b[q] = min(1.0, a[q] + 0.5)
    p = paired_summary({"A": a, "B": b}, strata, artifact, min_queries=10, n_resamples=500,
                       power=False)
    wins = {r.stratum: r.winner for r in p.pairs[0].stratum_differences.strata}
    assert wins[target] == "B" and sum(w is not None for w in wins.values()) == 1


def test_alignment_is_reported_next_to_lexical_containment(strata, artifact, two_systems):
    assert strata.lexical is not None and strata.lexical.shape == (strata.n_queries,)
    finite = strata.lexical[np.isfinite(strata.lexical)]
    assert finite.size and ((finite >= 0) & (finite <= 1)).all()
    block = stratified_summary(two_systems["A"], strata, artifact, n_resamples=20,
                               power=False).to_dict()
    lex = block["alignment_vs_lexical"]
    assert lex["partial_given_rel_and_lexical"]["n"] > 20 and "J " in lex["verdict"]


def test_lexical_containment_by_hand():
    from mteb_stratified.stratification.lexical import lexical_containment, partial_spearman

    queries = {"q": "Statins and breast cancer"}
    corpus = {"d1": {"title": "statin", "text": "cancers of the breast"},
              "d2": {"title": "coffee", "text": "tea"}}
    qrels = {"q": {"d1": 1, "d2": 1}}
    # content words: statin, breast, cancer ("and" is a stop word); d1 has all 3, d2 none
    assert lexical_containment(queries, corpus, qrels, ["q"]).tolist() == [0.5]
    rng = np.random.default_rng(0)
    z = rng.random(300)
    x = z + rng.normal(0, 0.1, 300)
    y = z + rng.normal(0, 0.1, 300)
    assert partial_spearman(x, y, [])["partial"] > 0.8       # both follow z
    assert abs(partial_spearman(x, y, [z])["partial"]) < 0.2  # nothing left given z
