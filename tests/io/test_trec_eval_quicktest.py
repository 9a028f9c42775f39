"""trec_eval's own quicktest files (``tests/io/data/trec_eval``, copied from trec_eval's
``test/`` folder) read with our readers give trec_eval's printed numbers.

The probe of issue #15 found two of them refused: ``results.trunc`` (text after the run tag,
which trec_eval ignores) and ``qrels.test.with-comments`` (``#`` comment lines, which trec_eval
skips). trec_eval prints four decimals; our tie-oblivious value (trec_eval's order) rounded to
four decimals must be the printed one.
"""

from __future__ import annotations

import os
import re

import pytest

import mteb_stratified
from mteb_stratified.core.ranking.measures import TREC_EVAL_FAMILIES

DATA = os.path.join(os.path.dirname(__file__), "data", "trec_eval")
_NAME = re.compile(r"(ndcg_cut|P|recall|map_cut|success)_(\d+)|(ndcg|map|recip_rank)")


def _printed(name: str) -> dict:
    """``{(trec_eval measure, qid or 'all'): value}`` of a trec_eval output file, for the
    measures we have."""
    out = {}
    for line in open(os.path.join(DATA, name), encoding="utf-8"):
        measure, qid, value = line.split()
        if _NAME.fullmatch(measure):
            out[(measure, qid)] = float(value)
    return out


def _ours(measure: str) -> str:
    m = _NAME.fullmatch(measure)
    if m.group(3):
        return TREC_EVAL_FAMILIES[m.group(3)]
    return f"{TREC_EVAL_FAMILIES[m.group(1)]}@{m.group(2)}"


def _check(printed: dict, qrels: str, run: str, *, missing: str = "skip") -> int:
    measures = sorted({_ours(m) for m, _ in printed})
    res = mteb_stratified.evaluate(os.path.join(DATA, qrels), os.path.join(DATA, run),
                                   measures, missing=missing)
    per_query = res.per_query()
    checked = 0
    for (measure, qid), want in printed.items():
        ours = _ours(measure)
        got = res[ours].oblivious if qid == "all" else per_query[qid][ours].oblivious
        assert round(got, 4) == pytest.approx(want, abs=1e-12), (measure, qid, got, want)
        checked += 1
    return checked


@pytest.mark.parametrize("qrels", ["qrels.test", "qrels.test.with-comments"])
def test_quicktest_out_test(qrels):
    """``trec_eval qrels results.test | diff - out.test``, with and without comment lines."""
    assert _check(_printed("out.test"), qrels, "results.test") == 11  # map, RR, P_5 … P_1000


def test_quicktest_results_trunc_with_missing_as_zero():
    """``trec_eval -m all_trec -q -c qrels.test results.trunc | diff - out.test.aqc``: every
    per-query and overall value of the measures we have (P, recall, nDCG, AP, RR, success)."""
    assert _check(_printed("out.test.aqc"), "qrels.test", "results.trunc", missing="zero") == 168
