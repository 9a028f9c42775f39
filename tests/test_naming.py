"""One naming table: ir_measures Measure <-> MTEB score key <-> BEIR key <-> pytrec_eval name."""

import pytest

from mteb_stratified.core import InputError, parse_measure
from mteb_stratified.core.ranking.measures import MEASURE_NAMES
from mteb_stratified.naming import (STATS, beir_key, canonical_name, measure_of_beir_key,
                                    measure_of_key, mteb_key, mteb_measures, split_tie_key,
                                    tie_key, trec_eval_key)


@pytest.mark.parametrize("measure, key", [
    ("nDCG@10", "ndcg_at_10"), ("MRR@10", "mrr_at_10"), ("RR@10", "mrr_at_10"),
    ("R@100", "recall_at_100"), ("P@5", "precision_at_5"), ("AP@1000", "map_at_1000"),
    ("AP", "map"), ("nDCG", "ndcg"), ("Success@1", "success_at_1"),
    ("nDCG(dcg='exp-log2')@10", "ndcg_dcg_exp_log2_at_10"), ("P(rel=2)@10", "precision_rel_2_at_10")])
def test_mteb_keys_round_trip(measure, key):
    """Every measure has a usable key that reads back as the same measure (the earlier tables
    gave MRR_at_10 for MRR@10 and an unusable key for the exp-log2 gain)."""
    assert mteb_key(measure) == key
    assert measure_of_key(key) == parse_measure(measure)
    for stat in STATS:
        assert split_tie_key(tie_key(measure, stat)) == (key, stat)


def test_every_measure_name_with_every_parameter_round_trips():
    for name in MEASURE_NAMES:
        for cutoff in ("", "@1", "@10", "@1000"):
            for params in ("", "(rel=2)", "(dcg='exp-log2')"):
                try:
                    m = parse_measure(name + params + cutoff)
                except InputError:
                    continue  # a parameter the measure does not take, or a required cutoff
                assert measure_of_key(mteb_key(m)) == m, repr(m)


def test_keys_that_are_not_measures():
    for key in ("main_score", "ties_query_share_at_10", "strata_pooled_ndcg_at_10_expected",
                "ndcg_at_10_ci_low", "hf_subset"):
        assert split_tie_key(key) is None
    with pytest.raises(InputError, match="not a measure key"):
        measure_of_key("ndcg_at_x")


def test_beir_and_trec_eval_names():
    assert [beir_key(m) for m in ("nDCG@10", "AP@10", "R@100", "P@1", "MRR@10")] == \
        ["NDCG@10", "MAP@10", "Recall@100", "P@1", "MRR@10"]
    assert measure_of_beir_key("MAP@10") == parse_measure("AP@10")
    assert [trec_eval_key(m) for m in ("nDCG@10", "AP@100", "R@10", "P@5")] == \
        ["ndcg_cut_10", "map_cut_100", "recall_10", "P_5"]
    with pytest.raises(InputError):
        beir_key("Success@1")
    assert canonical_name("MRR@10") == "RR@10"
    assert [repr(m) for m in mteb_measures([10, 1])][:3] == ["nDCG@1", "nDCG@10", "RR@1"]


def test_per_query_csv_takes_the_documented_alias(tmp_path):
    """read_per_query_csv found no rows for MRR@10 although the CSV holds RR@10."""
    from mteb_stratified.io.mteb_results import read_per_query_csv

    path = tmp_path / "pq.csv"
    path.write_text("qid,measure,expected,min,max,oblivious\nq1,RR@10,0.5,0.5,0.5,0.5\n")
    assert read_per_query_csv(path, "MRR@10")["expected"] == {"q1": 0.5}


def test_rr_has_no_pytrec_eval_cutoff_name():
    with pytest.raises(InputError, match="RR has no cutoff"):
        trec_eval_key("RR@10")
