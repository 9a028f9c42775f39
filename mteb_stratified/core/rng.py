"""Random generators: every random step takes ``rng=`` (a ``numpy.random.Generator`` or a seed
for one) or ``seed=``, never the global numpy state."""

from __future__ import annotations

import numpy as np

from .errors import InputError

__all__ = ["as_generator", "MAX_SEED", "MAX_CONSENSUS_RUNS"]

#: The largest seed the commands take: numpy and Leiden (leidenalg, an int64) take it, and the
#: seeds derived from it (seed·R + i for R ≤ MAX_CONSENSUS_RUNS Leiden consensus runs, and
#: seed + 1) stay far below 2**63.
MAX_SEED = 2**31 - 1
MAX_CONSENSUS_RUNS = 1000


def as_generator(rng=None, seed=None) -> np.random.Generator:
    """The generator of ``rng`` (a Generator, or anything ``default_rng`` takes) or ``seed``."""
    if rng is not None and seed is not None:
        raise InputError("pass rng= or seed=, not both", fix="drop one of them")
    if rng is None:
        return np.random.default_rng(seed)
    if isinstance(rng, np.random.Generator):
        return rng
    return np.random.default_rng(rng)
