"""``generate --writer select`` (the offline default): real judged queries from held-back splits
fill the uncovered strata (issue #29).  On the NFCorpus slice (test judges 12 queries, dev 28)
with its own structure; the strata and the qrels are recomputed here from the written folder.
(The bundled NFCorpus run is measured in the README: its gate embeds 3,633 documents.)"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from mteb_stratified.cli import main as cli_main

pytestmark = pytest.mark.slow


def _select(dataset, structure, out, *extra) -> int:
    return cli_main.main(["generate", "--dataset", dataset, "--structure", structure, "--out",
                          str(out), "--no-progress", "--json", *extra])


def _error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and "mteb-stratified generate: error:" in err, err
    return err


@pytest.fixture(scope="module")
def selected(slice_paths, tmp_path_factory):
    folder, structure = slice_paths
    out = tmp_path_factory.mktemp("select") / "out"
    assert _select(folder, structure, out, "--target-msc", "1", "--target-scc", "0.9") == 0
    return str(out)


def test_selection_fills_strata_with_real_judged_queries(selected, slice_paths, slice_data):
    from mteb_stratified.core import cluster_coverage
    from mteb_stratified.io import load_beir
    from mteb_stratified.stratification import cluster_weights, corpus_bins, strata_for_dataset

    folder, _ = slice_paths
    _, art = slice_data
    cov = json.load(open(os.path.join(selected, "coverage.json"), encoding="utf-8"))
    # the original splits byte for byte; the selected queries in their own split
    for split in ("test", "dev"):
        assert (open(os.path.join(selected, "qrels", f"{split}.tsv"), "rb").read()
                == open(os.path.join(folder, "qrels", f"{split}.tsv"), "rb").read())
    assert not os.path.exists(os.path.join(selected, "qrels", "generated.tsv"))
    dev, sel = load_beir(folder, "dev"), load_beir(selected, "selected")
    assert sel.qrels and set(sel.qrels) <= set(dev.qrels)
    assert all(sel.qrels[q] == dev.qrels[q] for q in sel.qrels)   # their human qrels, as judged
    assert sel.generated() == []                                   # real queries, not generated
    rows = {json.loads(x)["_id"]: json.loads(x) for x in open(os.path.join(selected,
                                                                          "queries.jsonl"))}
    assert {q for q, r in rows.items() if "selected" in r} == set(sel.qrels)
    assert all(rows[q]["selected"]["from_split"] == "dev" for q in sel.qrels)
    # the coverage after, recomputed from the written test and selected splits
    test = load_beir(selected, "test")
    weights = cluster_weights(art, test.corpus)
    bins = corpus_bins(art)
    prim = []
    for ds in (test, sel):
        prim += strata_for_dataset(art, ds, bins=bins, check_corpus=False).primary.tolist()
    after = cluster_coverage(prim, weights.primary_share(), n_min=5)
    assert cov["after"]["cluster"]["msc"] == pytest.approx(after.msc)
    assert cov["after"]["cluster"]["scc"] == pytest.approx(after.scc)
    assert cov["after"]["n_queries"] == cov["before"]["n_queries"] + len(sel.qrels)
    assert after.msc >= cov["before"]["cluster"]["msc"]
    assert after.scc > cov["before"]["cluster"]["scc"]
    # the pool's own ceiling bounds what selection reached; the unfillable strata are listed
    pool = cov["pool"]
    assert pool["splits"] == ["dev"] and pool["selected"] == len(sel.qrels)
    assert pool["ceiling"]["msc"] >= after.msc - 1e-12 and pool["ceiling"]["scc"] >= after.scc
    counts = after.query_counts
    for u in cov["unfilled"]:
        assert counts[u["cluster"]] == u["queries"] < 5
    if cov["stop_reason"] != "coverage targets met":
        assert all(u["pool_queries_left"] == 0 for u in cov["unfilled"])
    md = open(os.path.join(selected, "coverage.md"), encoding="utf-8").read()
    assert "Pool:" in md and "selected" in md
    # the validity gate: the judge is the human qrels (not measured), the panel is scored on
    # both query sets, the baseline adds as many documents as were selected
    gate = cov["gate"]
    assert gate["judge"]["measured"] is False and "human qrels" in gate["judge"]["why"]
    so = gate["system_order"]
    assert so["systems"] == ["BM25", "MiniLM"] and so["kendall_tau"] in (-1.0, 1.0)
    assert gate["trivial_baseline"]["documents"] == len(sel.qrels)
    # a selected query lands in the cluster it was taken for: selection's cluster coverage is
    # the targeting's, exactly
    assert gate["trivial_baseline"]["msc"] == pytest.approx(after.msc)
    assert gate["trivial_baseline"]["scc"] == pytest.approx(after.scc)
    assert gate["lexical_bias"]["added"]["queries"] == len(sel.qrels)
    assert gate["passed"] is (so["kendall_tau"] >= 0)
    assert f"**Validity gate: {gate['verdict']}**" in md


def test_same_seed_same_selection(selected, slice_paths, tmp_path):
    folder, structure = slice_paths
    again = tmp_path / "again"
    assert _select(folder, structure, again, "--target-msc", "1", "--target-scc", "0.9") == 0
    for name in ("queries.jsonl", "qrels/selected.tsv", "coverage.json"):
        assert (open(os.path.join(selected, name), "rb").read()
                == (again / name).read_bytes()), name


# ---------------------------------------------------------------------------------------------
# bad input: exit 2 before any work
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("extra, message", [
    (["--pool-splits", "train"], "--pool-splits train: the dataset has no split 'train' with "
                                 "qrels"),
    (["--pool-splits", "test"], "--pool-splits test: that is the evaluated split"),
    (["--writer", "llm"], "--writer llm needs --base-url"),
    (["--writer", "template", "--pool-splits", "dev"], "--pool-splits applies only to --writer "
                                                       "select"),
])
def test_bad_pools_and_writers(slice_paths, tmp_path, capsys, extra, message):
    folder, structure = slice_paths
    assert _select(folder, structure, tmp_path / "o", *extra) == 2
    err = _error(capsys)
    assert message in err, err
    assert not (tmp_path / "o").exists()


def test_missing_pool_names_the_splits_that_exist(slice_paths, tmp_path, capsys):
    folder, structure = slice_paths
    assert _select(folder, structure, tmp_path / "o", "--pool-splits", "train") == 2
    assert "choose among dev, test" in _error(capsys)


def test_a_pool_split_without_judgments_is_a_clear_error(slice_paths, tmp_path, capsys):
    """A pool split whose qrels file holds only its header: exit 2 naming that file, before
    any output is written."""
    folder, structure = slice_paths
    bad = tmp_path / "bad"
    shutil.copytree(folder, bad)
    (bad / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n")
    assert _select(str(bad), structure, tmp_path / "o", "--pool-splits", "train") == 2
    err = _error(capsys)
    assert f"{bad / 'qrels' / 'train.tsv'}: pool split 'train': no judgments" in err
    assert "--pool-splits (dev)" in err  # the split that could be pooled instead
    assert not (tmp_path / "o").exists()


def test_a_pool_that_shares_query_ids_with_the_evaluated_split(slice_paths, tmp_path, capsys):
    folder, structure = slice_paths
    bad = tmp_path / "bad"
    shutil.copytree(folder, bad)
    test_rows = (bad / "qrels" / "test.tsv").read_text().splitlines()[1:3]
    with open(bad / "qrels" / "dev.tsv", "a") as fh:
        fh.write("\n".join(test_rows) + "\n")
    shared = sorted({r.split("\t")[0] for r in test_rows})
    assert _select(str(bad), structure, tmp_path / "o") == 2
    err = _error(capsys)
    assert "shares" in err and "never be evaluated twice" in err
    assert all(q in err for q in shared)


def test_pool_splits_that_share_query_ids(slice_paths, tmp_path, capsys):
    folder, structure = slice_paths
    two = tmp_path / "two"
    shutil.copytree(folder, two)
    shutil.copy(two / "qrels" / "dev.tsv", two / "qrels" / "train.tsv")
    assert _select(str(two), structure, tmp_path / "o", "--pool-splits", "dev,train") == 2
    assert "the pool splits 'dev' and 'train' share" in _error(capsys)


def test_a_train_pool_warns(slice_paths, tmp_path, capsys):
    folder, structure = slice_paths
    with_train = tmp_path / "t"
    shutil.copytree(folder, with_train)
    os.rename(with_train / "qrels" / "dev.tsv", with_train / "qrels" / "train.tsv")
    assert _select(str(with_train), structure, tmp_path / "o", "--max-candidates", "2") == 0
    err = capsys.readouterr().err
    assert "warning: the pool holds train queries" in err


def test_a_users_run_joins_the_gate_panel(slice_paths, tmp_path, capsys):
    """--run NAME=FILE: a run over the original and the selected queries joins BM25 and
    MiniLM; one without the added queries is left out, with a note; a bad spec is exit 2."""
    from mteb_stratified.adapters.bm25 import bm25_run
    from mteb_stratified.io import load_beir, write_run

    folder, structure = slice_paths
    test, dev = load_beir(folder, "test"), load_beir(folder, "dev", corpus=False)
    queries = {**{q: test.queries[q] for q in test.qrels}, **{q: dev.queries[q]
                                                               for q in dev.qrels}}
    run, _ = bm25_run(test.corpus, queries, depth=50, k1=0.9, b=0.4)
    full, part = tmp_path / "full.trec", tmp_path / "part.trec"
    write_run(run, str(full), tag="bm25-anserini")
    write_run({q: run[q] for q in test.qrels}, str(part), tag="test-only")
    out = tmp_path / "o"
    assert _select(folder, structure, out, "--target-msc", "1", "--target-scc", "0.9",
                   "--run", f"anserini={full}", "--run", f"testonly={part}") == 0
    err = capsys.readouterr().err
    assert "--run testonly: no ranking for any of the" in err and "left out of the panel" in err
    gate = json.load(open(out / "coverage.json", encoding="utf-8"))["gate"]
    assert gate["panel"] == ["BM25", "MiniLM", "anserini"]
    assert gate["system_order"]["systems"] == ["BM25", "MiniLM", "anserini"]
    assert len(gate["system_order"]["pairs"]) == 3 and len(gate["panel_left_out"]) == 1
    assert _select(folder, structure, tmp_path / "o2", "--run", "nope") == 2
    assert "--run 'nope': expected NAME=FILE" in _error(capsys)
