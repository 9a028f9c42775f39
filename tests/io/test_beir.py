"""The BEIR folder loader, on the bundled NFCorpus (real data) and on broken folders."""

import gzip
import json

import pytest

from mteb_stratified.core import InputError
from mteb_stratified.io import bundled_path, load_beir


def test_bundled_nfcorpus_counts():
    data = load_beir(bundled_path("nfcorpus"), "test")
    assert len(data.corpus) == 3633
    assert len(data.queries) == 323
    assert sum(len(v) for v in data.qrels.values()) == 12334
    assert all(d in data.corpus for docs in data.qrels.values() for d in docs)


def make(tmp_path, corpus, queries, qrels):
    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    with gzip.open(tmp_path / "queries.jsonl.gz", "wt") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in queries))
    (tmp_path / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return str(tmp_path)


def test_duplicate_ids_and_empty_queries(tmp_path):
    folder = make(tmp_path, [{"_id": "d1", "text": "a"}, {"_id": "d1", "text": "b"}],
                  [{"_id": "q1", "text": "x"}], "q1\td1\t1\n")
    with pytest.raises(InputError, match="appears twice"):
        load_beir(folder)


def test_empty_query_text(tmp_path):
    folder = make(tmp_path, [{"_id": "d1", "text": "a"}], [{"_id": "q1", "text": "  "}],
                  "q1\td1\t1\n")
    with pytest.raises(InputError, match="empty text"):
        load_beir(folder)


def test_missing_folder(tmp_path):
    with pytest.raises(InputError, match="dataset folder not found"):
        load_beir(str(tmp_path / "none"))
