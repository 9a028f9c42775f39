"""PerQuery: per-query values typed and aligned once; bias derived in one place."""

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.core.stats.estimators import (StratifiedDesign, per_stratum,
                                                   stratified_bootstrap,
                                             stratified_estimates)
from mteb_stratified.core.ranking.per_query import PerQuery


def _mapping():
    return {"expected": {"a": 0.5, "b": 0.2, "c": 0.9},
            "oblivious": {"a": 0.4, "b": 0.2, "c": 1.0},
            "min": {"a": 0.3, "b": 0.2, "c": 0.8}, "max": {"a": 0.7, "b": 0.2, "c": 1.0}}


def test_from_mapping_derives_bias_and_reads_back():
    pq = PerQuery.from_mapping(_mapping())
    assert pq.queries == ("a", "b", "c") and "bias" in pq.keys
    np.testing.assert_allclose(pq.column("bias"), [-0.1, 0.0, 0.1])
    assert pq["expected"] == {"a": 0.5, "b": 0.2, "c": 0.9}  # the mapping view
    assert PerQuery.from_mapping({"a": 1.0})["expected"] == {"a": 1.0}
    assert PerQuery.from_mapping(pq) is pq
    with pytest.raises(InputError, match="cover other queries"):
        PerQuery.from_mapping({"expected": {"a": 1.0}, "min": {"b": 0.0}})
    with pytest.raises(InputError, match="finite"):
        PerQuery.from_mapping({"a": float("nan")})
    with pytest.raises(InputError, match="no per-query 'range'"):
        pq.column("range")


def test_estimators_take_it_aligned_once_with_the_same_numbers():
    m = _mapping()
    d = StratifiedDesign.from_labels([1, 0, 1], {0: 0.5, 1: 0.5}, queries=["c", "b", "a"])
    pq = PerQuery.from_mapping(m)
    with_dicts = stratified_estimates(m, d)
    with_pq = stratified_estimates(pq, d)
    for key in m:
        for est in with_dicts[key]:
            assert with_pq[key][est].estimate == pytest.approx(with_dicts[key][est].estimate)
    boot_a = stratified_bootstrap(pq, d, n_resamples=200, seed=1)
    boot_b = stratified_bootstrap(pq, d, n_resamples=200, seed=1, analytic=with_pq)
    np.testing.assert_array_equal(boot_a["expected"]["pooled"].replicates,
                                  boot_b["expected"]["pooled"].replicates)
    np.testing.assert_allclose(per_stratum(pq, d)["bias"].mean[:2], [0.0, 0.0])
    with pytest.raises(InputError, match="do not match the stratified queries"):
        pq.subset(["a", "b"]).aligned(d)


def test_the_mapping_contract():
    pq = PerQuery.from_mapping(_mapping())
    assert "min" in pq and "range" not in pq and pq.get("range") is None
    with pytest.raises(KeyError):
        pq["range"]
