"""The driver's streamed steps (issue #32): rows read from the checkpoint in chunks, names held
as codes, give what the rows held in memory gave."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import numpy as np
import pytest

from mteb_stratified.structure.extraction import extract_documents
from mteb_stratified.structure.extractors import Entity
from mteb_stratified.structure.fingerprint import settings_hash
from mteb_stratified.structure.linking import canonical_doc_entities
from mteb_stratified.structure.pipeline import BuildReport, StructureConfig
from mteb_stratified.structure.rows import CheckpointRows, ordered_rows
from mteb_stratified.structure.vocabulary import build_vocabulary

WORDS = ["insulin resistance", "vitamin d", "breast cancer", "statin", "placebo", "cohort",
         "fish oil", "omega-3 fatty acid", "obesity", "red meat", "dietary fiber", "zinc"]


class ToyExtractor:
    """Names drawn from WORDS by the text's hash; every 7th document fails."""

    name, version = "toy", "1"

    def params(self) -> dict:
        return {}

    def extract(self, texts):
        self.failures = {}
        out = []
        for i, t in enumerate(texts):
            h = int(hashlib.sha256(t.encode()).hexdigest(), 16)
            picks = [WORDS[(h >> (4 * j)) % len(WORDS)] for j in range(1 + h % 6)]
            out.append([Entity(p.upper() if j % 2 else p, f"{t[:20]} ({j})")
                        for j, p in enumerate(picks)])
            if h % 7 == 0:
                self.failures[i] = "toy failure"
                out[-1] = []
        return out


class ShuffledEngine:
    """Chunks extracted in reverse, each row given twice (a retried worker)."""

    name = "shuffled"
    progress_bars = True

    def extract(self, chunks, texts, extractor, cfg):
        from mteb_stratified.structure.extraction import extract_rows
        for chunk in reversed(list(chunks)):
            rows = extract_rows(extractor, chunk, texts, cfg)
            yield rows[::-1]
            yield rows


@pytest.fixture()
def texts():
    ids = sorted(f"doc-{i:03d}" for i in range(90))
    return {d: f"Study {d} of diet (DT) and {i % 5} things." for i, d in enumerate(ids)}


def _reference_vocabulary(texts, rows, cfg):
    """The vocabulary as the driver worked it out with every row in memory (before #32)."""
    doc_names = {d: [e[0] for e in rows[d]["entities"]] for d in texts}
    df: Counter = Counter()
    for d in texts:
        df.update(doc_names[d])
    description: dict = {}
    for d in texts:
        for n, desc in rows[d]["entities"]:
            description.setdefault(n, desc)
    return doc_names, df, description


def test_a_checkpoint_read_in_chunks_of_one_equals_one_read_whole(tmp_path, texts):
    cfg = StructureConfig(chunk_size=8)
    rows = extract_documents(texts, ToyExtractor(), cfg, str(tmp_path / "work"), False,
                             BuildReport(), engine=ShuffledEngine())
    assert isinstance(rows, CheckpointRows) and list(rows) == list(texts)
    loaded = {}
    with open(rows.path, encoding="utf-8") as fh:  
        for line in fh:
            row = json.loads(line)
            loaded[row["doc_id"]] = row
    assert sum(1 for _ in open(rows.path)) == len(texts)  # a repeated row is kept once
    for chunk in (1, 3, 4096):
        again = CheckpointRows(rows.path, list(texts), rows._offsets, chunk=chunk)
        assert dict(again.items()) == loaded
        assert [d for d, _ in ordered_rows(again, sorted(texts, reverse=True))] == \
            sorted(texts, reverse=True)
    assert rows["doc-005"] == loaded["doc-005"] and "nope" not in rows
    with pytest.raises(KeyError):
        rows["nope"]


def test_resumed_and_retried_rows_are_the_last_ones_of_each_document(tmp_path, texts):
    cfg = StructureConfig(chunk_size=8)
    work = str(tmp_path / "work")
    first = extract_documents(texts, ToyExtractor(), cfg, work, False, BuildReport())
    failed = {d for d, r in first.items() if r.get("failed")}
    assert failed
    report = BuildReport()
    again = extract_documents(texts, ToyExtractor(), cfg, work, False, report, retry_failed=True)
    assert report.resumed_docs == len(texts) - len(failed)
    assert report.extracted_docs == len(failed)
    assert dict(again.items()) == dict(first.items())  # the same toy answers, appended again
    mem = extract_documents(texts, ToyExtractor(), cfg, None, False, BuildReport())
    assert isinstance(mem, dict) and mem == dict(again.items())


def test_the_streamed_vocabulary_and_doc_entities_equal_the_in_memory_ones(tmp_path, texts):
    cfg = StructureConfig(chunk_size=8, min_doc_freq=2, max_doc_share=0.3,
                          generic_max_ridf=None)
    rows = extract_documents(texts, ToyExtractor(), cfg, str(tmp_path / "work"), False,
                             BuildReport(), engine=ShuffledEngine())
    in_memory = dict(rows.items())
    doc_names, df, description = _reference_vocabulary(texts, in_memory, cfg)
    for source in (rows, in_memory):
        vocab = build_vocabulary(texts, source, cfg)
        assert dict(vocab.doc_names.items()) == doc_names
        assert list(vocab.doc_freq.items()) == list(df.items())  # first-occurrence order too
        assert list(vocab.description.items()) == list(description.items())
        assert vocab.stop_entities and vocab.names
    # canonical names per document: aliases folded, stop-entities dropped, sorted, distinct
    names = sorted(df)
    alias_of = {names[1]: names[0], names[3]: names[2], names[4]: names[2]}
    stop = set(vocab.stop_entities)
    expected = {d: sorted({alias_of.get(n, n) for n in doc_names[d] if n not in stop})
                for d in texts}
    expected_df: Counter = Counter()
    for d in texts:
        expected_df.update(expected[d])
    doc_entities, node_df = canonical_doc_entities(vocab.doc_names, alias_of, stop)
    assert dict(doc_entities.items()) == expected
    assert list(node_df.items()) == list(expected_df.items())
    assert doc_entities["doc-010"] == expected["doc-010"]
    assert doc_entities.get("nope", ()) == ()


def test_settings_hash_is_the_hash_of_the_json_text():
    objs = [{"b": [1, 2.5, {"z": "é\u2028"}], "a": None, "c": float("inf")},
            {"model": None, "documents": ["x" * 5000] * 300 + ["ü"]}, [], "s"]
    for obj in objs:
        text = json.dumps(obj, sort_keys=True).encode()
        assert settings_hash(obj) == hashlib.sha256(text).hexdigest()[:16]


def test_an_empty_corpus_of_rows_gives_empty_name_lists(tmp_path):
    cfg = StructureConfig(generic_max_ridf=None)
    vocab = build_vocabulary({}, {}, cfg)
    assert len(vocab.doc_names) == 0 and vocab.names == []
    doc_entities, node_df = canonical_doc_entities(vocab.doc_names, {}, set())
    assert dict(doc_entities.items()) == {} and node_df == Counter()
    assert np.asarray(doc_entities.offsets).tolist() == [0]
