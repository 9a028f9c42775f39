"""The package :mod:`mteb_stratified.core.stats.strata` re-exports every name that was public in the
single module it was split from, each owned by one of its parts."""

from __future__ import annotations

import importlib

import mteb_stratified.core as core
import mteb_stratified.core.stats.strata as strata

#: ``__all__`` of the single module core/stats/strata.py, and its public names outside ``__all__``.
BEFORE_SPLIT = ["ClusterWeights", "Bins", "DEFAULT_BINS", "LEVELS", "SCHEMES", "ExcludedQuery",
                "QueryStrata", "stratify", "jaccard", "soft_containment", "document_dispersion",
                "check_scheme", "mass_array", "tie_hash", "argmax_rows"]
OUTSIDE_ALL = ["row_entropy", "pairwise_dispersion", "alignment_figures"]
PARTS = ("weights", "bins", "dispersion", "query_strata")


def test_the_package_exports_the_single_modules_names_each_from_one_part():
    assert strata.__all__ == BEFORE_SPLIT
    owners = {}
    for part in PARTS:
        module = importlib.import_module(f"mteb_stratified.core.stats.strata.{part}")
        for name in module.__all__:
            assert name not in owners, f"{name} is owned by {owners[name]} and {part}"
            owners[name] = part
            if name in BEFORE_SPLIT + OUTSIDE_ALL:
                assert getattr(strata, name) is getattr(module, name), name
    # every exported name has an owner part, but LEVELS, which core.stats.cells owns
    from mteb_stratified.core.stats.cells import LEVELS

    assert set(BEFORE_SPLIT + OUTSIDE_ALL) - set(owners) == {"LEVELS"}
    assert strata.LEVELS is LEVELS


def test_the_core_facade_names_load_from_the_package():
    for name in ("DEFAULT_BINS", "Bins", "ClusterWeights", "ExcludedQuery", "QueryStrata",
                 "document_dispersion", "stratify"):
        assert getattr(core, name) is getattr(strata, name)
