"""Shared hypothesis settings and strategies for the core tests (deterministic for CI)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from ._reference import Query


def fixed(max_examples: int):
    """Deterministic hypothesis settings: derandomized, no deadline, no example database."""
    return settings(max_examples=max_examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


TIED_SCORES = (0.0, 0.5, 1.0)


@st.composite
def queries(draw, max_candidates: int = 8, score_values=None, max_extra_judged: int = 3,
            grades=(-1, 0, 1, 2, 3), distinct_scores: bool = False):
    """One query: up to ``max_candidates`` candidates, some unjudged, plus judged documents
    that were not retrieved.  Doc ids are ``c0 c1 ...`` (candidates) and ``j0 j1 ...``.
    Grades include -1 (trec_eval: judged non-relevant, gain 0)."""
    n = draw(st.integers(0, max_candidates))
    docs = tuple(f"c{i}" for i in range(n))
    if distinct_scores:
        scores = tuple(draw(st.permutations(range(n)))) if n else ()
        scores = tuple(float(s) / 4 for s in scores)
    else:
        # heavy ties: scores from a tiny set (sometimes one or two values: big tie groups)
        values = score_values or draw(st.sampled_from([TIED_SCORES, (0.0, 1.0), (0.5,)]))
        scores = tuple(draw(st.lists(st.sampled_from(values), min_size=n, max_size=n)))
    judged_flags = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    qrels = {}
    for d, judged in zip(docs, judged_flags):
        if judged:
            qrels[d] = draw(st.sampled_from(grades))
    for i in range(draw(st.integers(0, max_extra_judged))):
        qrels[f"j{i}"] = draw(st.sampled_from(grades))
    if not qrels:  # a query needs at least one judgment to be in the qrels (as trec_eval)
        qrels["j_only"] = draw(st.sampled_from(grades))
    return Query(docs, scores, qrels)


def to_dicts(batch):
    """``[Query, ...]`` -> (qrels, run) pytrec_eval-style dicts with qids q0, q1, ..."""
    qrels = {f"q{i}": dict(q.qrels) for i, q in enumerate(batch)}
    run = {f"q{i}": dict(zip(q.docs, q.scores)) for i, q in enumerate(batch)}
    return qrels, run
