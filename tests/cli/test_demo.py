"""The README's main job: BM25 over the bundled NFCorpus, evaluated tie-aware (real data)."""

import os
import subprocess
import sys

import pytest

import mteb_stratified
from mteb_stratified.io import bundled_path, read_qrels, read_run

pytrec_eval = pytest.importorskip("pytrec_eval")
pytest.importorskip("bm25s")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    proc = subprocess.run([sys.executable, "-m", "mteb_stratified", "demo", "--out", str(out)],
                          capture_output=True, text=True, check=True)
    return out, proc.stdout


def test_demo_prints_both_tables(demo):
    _, text = demo
    assert "323 queries, 3633 documents" in text
    assert "scores cast to bfloat16" in text
    assert "expected = mean over every order of the tied documents" in text  # the legend
    assert "bias = oblivious - expected" in text
    assert "Takeaway: casting the scores to bfloat16 puts a tie in the top 10" in text
    assert f"wrote the two runs (11 MB) to {demo[0]}" in text
    assert "truncated_tie_queries" not in text and "top-all" not in text  # no jargon


def test_demo_folder_is_gitignored():
    ignored = open(os.path.join(os.path.dirname(__file__), "..", "..", ".gitignore")).read()
    assert "/mteb-stratified-demo/" in ignored.split()


def test_bf16_cast_creates_ties_and_oblivious_equals_pytrec_eval(demo):
    out, _ = demo
    qrels_path = os.path.join(bundled_path("nfcorpus"), "qrels", "test.tsv")
    qrels = read_qrels(qrels_path)
    measures = {"nDCG@10": "ndcg_cut_10", "P@10": "P_10", "R@100": "recall_100",
                "AP@100": "map_cut_100"}
    ranges = {}
    for tag in ("fp32", "bf16"):
        run = read_run(os.path.join(out, f"nfcorpus-test.bm25.{tag}.trec"))
        res = mteb_stratified.evaluate(qrels, run, list(measures))
        ref = pytrec_eval.RelevanceEvaluator(
            qrels, {"ndcg_cut.10", "P.10", "recall.100", "map_cut.100"}).evaluate(run)
        for ours, theirs in measures.items():
            got = dict(zip(res.queries, res[ours].values["oblivious"]))
            for qid, vals in ref.items():
                assert got[qid] == pytest.approx(vals[theirs], abs=1e-12)
        ranges[tag] = res["nDCG@10"].range
        assert res.tie_stats(10)["tied_query_share"] > 0
    assert ranges["bf16"] > ranges["fp32"] >= 0
    assert ranges["bf16"] > 1e-3
