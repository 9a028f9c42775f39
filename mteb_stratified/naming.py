"""Measure names: from an ir_measures-style :class:`~mteb_stratified.core.Measure` to MTEB's
score keys, BEIR's keys, pytrec_eval's names and the precision sweep's fields, and back; each
family's names are read from its :class:`~mteb_stratified.core.ranking.measures.MeasureFamily`.

=====================  ====================  ===========
Measure                MTEB key              BEIR key
=====================  ====================  ===========
``nDCG@k``             ``ndcg_at_k``         ``NDCG@k``
``RR@k`` (``MRR@k``)   ``mrr_at_k``          ``MRR@k``
``R@k``                ``recall_at_k``       ``Recall@k``
``P@k``                ``precision_at_k``    ``P@k``
``AP@k``               ``map_at_k``          ``MAP@k``
``Success@k``          ``success_at_k``      (none)
=====================  ====================  ===========

pytrec_eval's names (``ndcg_cut_10``) come from :func:`trec_eval_key`, the sweep's field
prefixes (``ndcg10``) from :func:`sweep_key`.  A measure without a
cutoff drops ``_at_k`` (``nDCG`` → ``ndcg``).  Parameters other than the
default are spelled into the MTEB key after the family, as ``_<param>_<value>`` with ``-``
written ``_`` (``nDCG(dcg='exp-log2')@10`` → ``ndcg_dcg_exp_log2_at_10``,
``P(rel=2)@10`` → ``precision_rel_2_at_10``); :func:`measure_of_key` reads them back, so every
key round-trips.  The tie-aware statistics are suffixes: ``<key>_<stat>`` for each stat of
:data:`STATS` (``ndcg_at_10_expected``).

To add a measure: declare its family, names included, in
:data:`mteb_stratified.core.ranking.measures.FAMILIES`; the tables here follow.
"""

from __future__ import annotations

import re

from .core.errors import InputError
from .core.ranking.measures import FAMILIES, Measure, parse_measure
from .core.ranking.results import SUFFIX_ORDER

__all__ = ["parse_measure", "STATS", "AUDIT_KEYS", "audit_key", "MTEB_FAMILIES", "BEIR_FAMILIES",
           "mteb_key", "tie_key", "split_tie_key", "measure_of_key", "beir_key",
           "measure_of_beir_key", "mteb_measures", "canonical_name", "trec_eval_key",
           "trec_eval_family", "sweep_key"]

#: The tie-aware statistics, as key suffixes (``ndcg_at_10_expected``), in the score files' order.
STATS = SUFFIX_ORDER
#: ir_measures name -> MTEB family; the order is MTEB's (ndcg, mrr, recall, precision, map).
MTEB_FAMILIES = {f.name: f.mteb for f in FAMILIES.values()}
#: The families an MTEB retrieval task reports (its ``k_values`` each).
MTEB_REPORTED = tuple(f.name for f in FAMILIES.values() if f.mteb_reported)
#: The tie audit's keys (``EvaluationResult.tie_stats(k)`` field -> MTEB key prefix, ``_at_k``
#: appended): ``ties_query_share_at_10``, ...
AUDIT_KEYS = {"tied_query_share": "ties_query_share", "mean_tie_group_size": "ties_mean_group_size",
              "max_tie_group_size": "ties_max_group_size"}
#: ir_measures name -> BEIR family (BEIR's EvaluateRetrieval keys), in BEIR's order:
#: ``evaluate``'s four (ndcg, _map, recall, precision), then ``evaluate_custom``'s MRR.
BEIR_FAMILIES = {name: FAMILIES[name].beir for name in ("nDCG", "AP", "R", "P", "RR")}

_FROM_MTEB = {v: k for k, v in MTEB_FAMILIES.items()}
_FROM_BEIR = {v: k for k, v in BEIR_FAMILIES.items()}


def _measure(measure) -> Measure:
    return parse_measure(measure)


def canonical_name(measure) -> str:
    """The canonical ir_measures spelling (``MRR@10`` -> ``RR@10``)."""
    return repr(_measure(measure))


def _param_text(value) -> str:
    return str(value).replace("-", "_")


def mteb_key(measure) -> str:
    """MTEB's score key of a measure: ``nDCG@10`` -> ``ndcg_at_10`` (module table)."""
    m = _measure(measure)
    key = MTEB_FAMILIES[m.name]
    for name, value in m.params:
        key += f"_{name}_{_param_text(value)}"
    return key if m.cutoff is None else f"{key}_at_{m.cutoff}"


def tie_key(measure, stat: str) -> str:
    """``("nDCG@10", "expected")`` -> ``"ndcg_at_10_expected"``."""
    if stat not in STATS:
        raise InputError(f"unknown statistic {stat!r}", fix=f"use one of {', '.join(STATS)}")
    return f"{mteb_key(measure)}_{stat}"


def split_tie_key(key: str) -> "tuple[str, str] | None":
    """``"ndcg_at_10_expected"`` -> ``("ndcg_at_10", "expected")``; None for another key."""
    for stat in STATS:
        if key.endswith("_" + stat):
            base = key[: -len(stat) - 1]
            if _measure_or_none(base) is not None:
                return base, stat
    return None


#: The parameter names of all families (``dcg|rel``), and those that take an integer.
_PARAMS = "|".join(sorted({p for f in FAMILIES.values() for p in f.params}))
_INT_PARAMS = {p for f in FAMILIES.values() for p, choices in f.params.items() if not choices}
_KEY = re.compile(rf"^(?P<family>[a-z]+)(?P<params>(?:_(?:{_PARAMS})_[A-Za-z0-9_]+?)*)"
                  r"(?:_at_(?P<k>\d+))?$")
_PARAM = re.compile(rf"^_({_PARAMS})_(.+?)(?=_(?:{_PARAMS})_|$)")


def _measure_or_none(key: str) -> "Measure | None":
    m = _KEY.match(key)
    if m is None or m.group("family") not in _FROM_MTEB:
        return None
    name = _FROM_MTEB[m.group("family")]
    params = []
    rest = m.group("params")
    while rest:
        pm = _PARAM.match(rest)
        if pm is None:
            return None
        pname, value = pm.group(1), pm.group(2)
        params.append(f"{pname}={int(value)}" if pname in _INT_PARAMS and value.isdigit()
                      else f"{pname}='{value.replace('_', '-')}'")
        rest = rest[pm.end():]
    text = name + (f"({','.join(params)})" if params else "") + (
        f"@{m.group('k')}" if m.group("k") else "")
    try:
        return parse_measure(text)
    except InputError:
        return None


def measure_of_key(key: str) -> Measure:
    """The measure of an MTEB key (``mrr_at_10`` -> ``RR@10``), or an :class:`InputError`."""
    m = _measure_or_none(key)
    if m is None:
        raise InputError(f"{key!r} is not a measure key",
                         fix="use MTEB's spelling, e.g. ndcg_at_10, mrr_at_10, recall_at_100")
    return m


def audit_key(field: str, k: int) -> str:
    """``("tied_query_share", 10)`` -> ``"ties_query_share_at_10"``."""
    if field not in AUDIT_KEYS:
        raise InputError(f"unknown tie-audit field {field!r}",
                         fix=f"use one of {', '.join(AUDIT_KEYS)}")
    return f"{AUDIT_KEYS[field]}_at_{int(k)}"


def beir_key(measure) -> str:
    """BEIR's key of a measure: ``nDCG@10`` -> ``NDCG@10`` (module table)."""
    m = _measure(measure)
    if m.name not in BEIR_FAMILIES or m.params or m.cutoff is None:
        raise InputError(f"BEIR has no key for {m!r}",
                         fix=f"BEIR reports {', '.join(f'{n}@k' for n in BEIR_FAMILIES)}")
    return f"{BEIR_FAMILIES[m.name]}@{m.cutoff}"


def measure_of_beir_key(key: str) -> Measure:
    """The measure of a BEIR key (``MAP@10`` -> ``AP@10``)."""
    family, _, k = key.partition("@")
    if family not in _FROM_BEIR or not k.isdigit():
        raise InputError(f"{key!r} is not a BEIR key", fix="e.g. NDCG@10, MAP@100, Recall@10")
    return parse_measure(f"{_FROM_BEIR[family]}@{k}")


def mteb_measures(k_values) -> list:
    """Every measure an MTEB retrieval task reports at its ``k_values`` (family order)."""
    ks = sorted({int(k) for k in k_values})
    return [parse_measure(f"{name}@{k}") for name in MTEB_REPORTED for k in ks]


def trec_eval_family(name: str) -> str:
    """pytrec_eval's family of an ir_measures name with a cutoff: ``nDCG`` -> ``ndcg_cut``."""
    family = FAMILIES[name].trec_eval if name in FAMILIES else None
    if family is None:
        raise InputError(f"pytrec_eval has no cutoff family for {name!r}",
                         fix="use nDCG, AP, R, P or Success (RR has no cutoff in trec_eval)")
    return family


def trec_eval_key(measure) -> str:
    """pytrec_eval's name of a measure with a cutoff: ``nDCG@10`` -> ``ndcg_cut_10``,
    ``AP@100`` -> ``map_cut_100``, ``R@10`` -> ``recall_10``, ``P@5`` -> ``P_5``."""
    m = _measure(measure)
    if m.cutoff is None or m.params:
        raise InputError(f"pytrec_eval has no cutoff measure for {m!r}",
                         fix="use nDCG@k, AP@k, R@k, P@k or Success@k")
    return f"{trec_eval_family(m.name)}_{m.cutoff}"


def sweep_key(measure) -> str:
    """The precision sweep's field prefix of a measure: ``nDCG@10`` -> ``ndcg10``,
    ``RR@10`` -> ``rr10``, ``R@100`` -> ``r100`` (its fields: ``ndcg10_expected``, ...)."""
    m = _measure(measure)
    if m.params:
        raise InputError(f"the precision sweep has no field for {m!r}",
                         fix="use a measure without parameters, e.g. nDCG@10")
    return m.family.sweep + ("" if m.cutoff is None else str(m.cutoff))
