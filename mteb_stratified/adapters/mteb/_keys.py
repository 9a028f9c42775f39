"""Names of the tie-aware scores in MTEB results (no mteb import).

MTEB reports ``{family}_at_{k}`` (``ndcg_at_10``).  The tie-aware columns add a suffix:

* ``{family}_at_{k}_expected`` - the expectation over all orderings of tied documents
  (uniformly random tie-breaking), the value a tie-aware evaluation reports;
* ``_min`` / ``_max`` - the worst / best tie-breaking;
* ``_oblivious`` - the value under trec_eval's order (score descending, then doc id descending,
  scores as float32), i.e. what stock MTEB / pytrec_eval report;
* ``_range`` = max - min, how much tie-breaking alone can move the score;
* ``_bias`` = oblivious - expected, how far the stock figure sits from the tie-aware one.

The family maps to the ir_measures measure: ndcg→nDCG, mrr→RR, recall→R, precision→P, map→AP
(``map_at_k`` is trec_eval's ``map_cut.k``, AP@k with all relevant documents in the
denominator).

The tie audit adds, for each k: ``ties_query_share_at_{k}`` (share of queries with a tie group of
≥ 2 documents reaching into the top k) and ``ties_mean_group_size_at_{k}`` (documents per tie
group over the groups reaching into the top k; 1.0 = no ties), and once per split:
``ties_depth_extended_queries`` (queries whose list the exact search widened past the depth to
keep a whole tie group), ``ties_truncated_queries`` (queries whose last tie group may continue
past the depth: always 0 with the exact search) and ``ties_distinct_scores_per_query``.
"""

from __future__ import annotations

FAMILIES = {"ndcg": "nDCG", "mrr": "RR", "recall": "R", "precision": "P", "map": "AP"}
STATS = ("expected", "min", "max", "range", "bias", "oblivious")
TIE_SUFFIXES = tuple(f"_{s}" for s in STATS)


def measure_name(family: str, k: int) -> str:
    """``("ndcg", 10)`` -> ``"nDCG@10"``."""
    return f"{FAMILIES[family]}@{int(k)}"


def score_key(family: str, k: int, stat: str) -> str:
    """``("ndcg", 10, "expected")`` -> ``"ndcg_at_10_expected"``."""
    return f"{family}_at_{int(k)}_{stat}"


def measures_for(k_values) -> list[str]:
    """All ir_measures names for the MTEB families at the given cutoffs."""
    return [measure_name(f, k) for f in FAMILIES for k in sorted({int(k) for k in k_values})]


def split_tie_key(key: str) -> tuple[str, str] | None:
    """``"ndcg_at_10_expected"`` -> ``("ndcg_at_10", "expected")``; None for other keys."""
    for stat in STATS:
        if key.endswith("_" + stat):
            base = key[: -len(stat) - 1]
            if "_at_" in base:
                return base, stat
    return None
