"""Fixtures for the MTEB adapter tests: offline env, a tiny BEIR folder, a tie-making encoder."""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

mteb = pytest.importorskip("mteb")
pytest.importorskip("torch")


@pytest.fixture(scope="session", autouse=True)
def registered():
    from mteb_stratified.adapters.mteb import register

    register()


def write_beir(folder, corpus, queries, qrels, *, gz=False, split="test"):
    """Write a BEIR folder; corpus {id: text}, queries {id: text}, qrels {qid: {did: g}}."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "qrels").mkdir(exist_ok=True)
    opener = (lambda p: gzip.open(str(p) + ".gz", "wt", encoding="utf-8")) if gz else \
        (lambda p: open(p, "w", encoding="utf-8"))
    with opener(folder / "corpus.jsonl") as fh:
        for d, t in corpus.items():
            fh.write(json.dumps({"_id": d, "title": "", "text": t}) + "\n")
    with opener(folder / "queries.jsonl") as fh:
        for q, t in queries.items():
            fh.write(json.dumps({"_id": q, "text": t}) + "\n")
    with open(folder / "qrels" / f"{split}.tsv", "w", encoding="utf-8", newline="") as fh:
        fh.write("query-id\tcorpus-id\tscore\r\n")
        for q, docs in qrels.items():
            for d, g in docs.items():
                fh.write(f"{q}\t{d}\t{g}\r\n")
    return folder


WORDS = ["apple", "banana", "cherry", "date", "elder", "fig", "grape", "honey"]


@pytest.fixture()
def tiny_beir(tmp_path):
    """40 docs over an 8-word vocabulary (many exact duplicates -> ties), 6 queries."""
    rng = np.random.default_rng(7)
    corpus = {f"d{i:02d}": " ".join(rng.choice(WORDS, size=2)) for i in range(40)}
    queries = {f"q{j}": " ".join(rng.choice(WORDS, size=2)) for j in range(6)}
    qrels = {}
    for j, q in enumerate(queries):
        qwords = set(queries[q].split())
        rel = [d for d, t in corpus.items() if qwords & set(t.split())][:5] or ["d00"]
        qrels[q] = {d: 1 + (i % 2) for i, d in enumerate(rel)}
    return write_beir(tmp_path / "tiny", corpus, queries, qrels)


class BagOfWordsEncoder:
    """Deterministic encoder: counts of 8 vocabulary words (so duplicate texts tie exactly)."""

    def __init__(self):
        from mteb.models.model_meta import ModelMeta, ScoringFunction

        self.mteb_model_meta = ModelMeta.create_empty(overwrites=dict(
            name="test/bag-of-words", revision="1", similarity_fn_name=ScoringFunction.DOT_PRODUCT,
            loader=None))
        self.calls = 0

    def encode(self, inputs, *, task_metadata=None, hf_split=None, hf_subset=None,
               prompt_type=None, **kwargs):
        self.calls += 1
        texts = [t for batch in inputs for t in batch["text"]]
        out = np.zeros((len(texts), len(WORDS)), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.split():
                if w in WORDS:
                    out[i, WORDS.index(w)] += 1
        return out

    def similarity(self, a, b):
        import torch

        return torch.as_tensor(np.asarray(a)) @ torch.as_tensor(np.asarray(b)).T

    def similarity_pairwise(self, a, b):
        import torch

        return (torch.as_tensor(np.asarray(a)) * torch.as_tensor(np.asarray(b))).sum(-1)


@pytest.fixture()
def bow_encoder():
    return BagOfWordsEncoder()
