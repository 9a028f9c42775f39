"""The report tests share the stratification fixtures (bundled structure, 40 queries)."""

from stratification.conftest import artifact, dataset, strata, two_systems  # noqa: F401
