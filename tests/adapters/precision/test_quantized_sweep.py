"""``precision-sweep --regimes fp32 quantized`` end to end on a real NFCorpus slice with the
packaged MiniLM: the columns of #47 are filled, consistent with each other, and saved."""

from __future__ import annotations

import json
import os

import pytest

from .conftest import doc_text


def _write_slice(nfcorpus, folder, n_queries=10, n_docs=160) -> str:
    """A BEIR folder: the first ``n_queries`` judged queries, their judged documents and others
    up to ``n_docs``."""
    qids = sorted(nfcorpus.qrels)[:n_queries]
    docs = sorted({d for q in qids for d in nfcorpus.qrels[q] if d in nfcorpus.corpus})[:100]
    docs += [d for d in sorted(nfcorpus.corpus) if d not in set(docs)][:n_docs - len(docs)]
    os.makedirs(os.path.join(folder, "qrels"))
    with open(os.path.join(folder, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for d in docs:
            row = {"_id": d, "title": "", "text": doc_text(nfcorpus.corpus[d])}
            f.write(json.dumps(row) + "\n")
    with open(os.path.join(folder, "queries.jsonl"), "w", encoding="utf-8") as f:
        for q in qids:
            f.write(json.dumps({"_id": q, "text": nfcorpus.queries[q]}) + "\n")
    with open(os.path.join(folder, "qrels", "test.tsv"), "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for q in qids:
            f.writelines(f"{q}\t{d}\t{g}\n" for d, g in nfcorpus.qrels[q].items() if d in docs)
    return folder


@pytest.fixture(scope="module")
def swept(nfcorpus, tmp_path_factory, minilm_fp32):
    from mteb_stratified.cli import precision_sweep

    base = tmp_path_factory.mktemp("quantized")
    task = _write_slice(nfcorpus, str(base / "beir"))
    out = str(base / "out")
    rc = precision_sweep.main(["--task", task, "--regimes", "fp32", "quantized",
                               "--rescore-multiplier", "1", "--cut-draws", "5", "--seed", "7",
                               "--out", out, "--quiet"])
    assert rc == 0
    with open(os.path.join(out, "precision_sweep.json"), encoding="utf-8") as f:
        data = json.load(f)
    rows = {r["regime"]: r for r in data["results"][0]["rows"]}
    rows["binary+rescore"] = rows.pop("binary+rescore[binary,x1]")  # its settings, named
    return out, rows


def test_every_quantized_column_is_filled_and_consistent(swept):
    _, rows = swept
    assert list(rows) == ["fp32", "int8", "binary", "binary+rescore"]
    assert [rows[r]["bytes_per_document"] for r in rows] == [1536, 384, 48, 48]
    assert rows["fp32"]["first_stage_recall_at_100"] == pytest.approx(1.0)
    for name, r in rows.items():
        for key in ("ndcg10", "rr10", "r100"):
            lo, e, hi = r[f"{key}_min"], r[f"{key}_expected"], r[f"{key}_max"]
            assert lo - 1e-12 <= e <= hi + 1e-12, name
            assert r[f"{key}_range"] == pytest.approx(hi - lo)
            assert r[f"{key}_bias"] == pytest.approx(r[f"{key}_oblivious"] - e)
        assert 0 < r["first_stage_recall_at_100"] <= 1 + 1e-12
        assert r["search_ms_per_query"] > 0 and r["distinct_scores_at_10"] <= 10
    binary, rescored = rows["binary"], rows["binary+rescore"]
    assert binary["ndcg10_range"] > 0 and binary["tied_share_at_10"] > 0.5
    assert rescored["tied_share_at_10"] <= binary["tied_share_at_10"]
    assert rescored["distinct_scores_at_10"] >= binary["distinct_scores_at_10"]
    meta = rescored["metadata"]
    assert (meta["quantization"], meta["rescore_docs"], meta["rescore_multiplier"],
            meta["first_stage_depth"], meta["hps"]) == ("ubinary", "binary", 1, 100, True)
    assert rows["int8"]["metadata"]["calibration_size"] == 160
    # the first stage's tie at its cut, redrawn: 5 seeded reruns of the rescore
    assert (meta["cut_draws"], meta["cut_seed"]) == (5, 7)
    for key in ("ndcg10", "rr10", "r100"):
        lo, mean, hi = (meta[f"cut_{key}_{s}"] for s in ("min", "mean", "max"))
        assert lo <= mean <= hi and meta[f"cut_{key}_sd"] >= 0
    assert "cut_draws" not in rows["binary"]["metadata"]


def test_markdown_and_plot_carry_the_quantized_table(swept):
    out, _ = swept
    with open(os.path.join(out, "precision_sweep.md"), encoding="utf-8") as f:
        md = f.read()
    assert "Quantized retrieval" in md and "recall of fp32 top 100" in md
    assert "| binary+rescore[binary,x1] |" in md and "(5 draws)" in md
    with open(os.path.join(out, "precision_sweep.png"), "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
