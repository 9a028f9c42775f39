"""The report tests share the stratification fixtures (bundled structure, 40 queries) and a
report of two systems built from them."""

import pytest
from stratification.conftest import artifact, dataset, strata, two_systems  # noqa: F401

from mteb_stratified.report import build_report
from mteb_stratified.stratification import paired_summary, stability_summary, stratified_summary


@pytest.fixture(scope="session")
def report(strata, artifact, two_systems):
    """Two systems' report: their summaries, stability and pairs."""
    # 40 queries: strata of ≥ 10 so that several are compared (the default 50 gives one)
    summaries = {n: stratified_summary(v, strata, artifact, n_resamples=100, seed=0, n_min=2,
                                       min_queries=10)
                 for n, v in two_systems.items()}
    return build_report(summaries,
                        stability_summary(two_systems, strata, artifact, min_queries=10),
                        paired_summary(two_systems, strata, artifact, n_min=2, min_queries=10,
                                       n_resamples=100))
