"""Step 2 of the structure pipeline: the vocabulary to cluster, and its embeddings.

* **filter by document frequency**: names in fewer than ``min_doc_freq`` documents are not
  clustered (they cannot tie documents together by identity; they stay in ``doc_entities``);
  names in more than ``max_doc_share`` of the documents are corpus stop-entities ("study",
  "result") and are dropped everywhere (listed in the metadata);
* **filter generic phrases**: names whose every word is a generic word of the corpus
  (:mod:`.specificity`: common and not bursty) are not clustered ("substantial increase",
  "essential role"); they stay in ``doc_entities`` (counted and listed in the metadata);
* **embed** the clustered vocabulary with its context (sentence-transformers; the packaged
  MiniLM by default): ``entity_context="description"`` embeds ``"name: description"`` (the
  sentence of the name's first occurrence), so names group by what the documents say about
  them and not by spelling ("nrg1 / rac1 / il-2"); ``"name"`` embeds the bare name.  Cached per
  vocabulary and context in the work folder.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .fingerprint import settings_hash
from .namelists import NameLists

__all__ = ["Vocabulary", "build_vocabulary", "embed_vocabulary", "embedding_inputs"]


@dataclass(frozen=True)
class Vocabulary:
    """The names of every document, their document frequencies, and what gets clustered."""

    doc_names: NameLists   # doc_id -> normalised names (extraction order), as codes
    doc_freq: Counter      # name -> documents that contain it
    stop_entities: list    # too frequent: dropped everywhere, most frequent first
    names: list            # the clustered vocabulary, sorted
    description: dict      # name -> its first description
    generic: list          # generic phrases left out of the clustering, sorted
    generic_test: object = None  # the fitted :class:`.specificity.GenericTest` (None: off)


def _read_names(texts: dict, rows) -> tuple:
    """One pass over the rows in corpus order (:func:`.rows.ordered_rows`, a chunk at a time):
    ``(doc_names, doc_freq, description)``, each name's first description."""
    from array import array

    from .rows import ordered_rows

    df: Counter = Counter()
    description: dict = {}
    code: dict = {}  # name -> code by first occurrence
    codes = array("i")
    offsets = array("q", [0])
    for _, row in ordered_rows(rows, texts):
        names = [e[0] for e in row["entities"]]
        df.update(names)
        for n, desc in row["entities"]:
            description.setdefault(n, desc)
        codes.extend([code.setdefault(n, len(code)) for n in names])
        offsets.append(len(codes))
    ordered = sorted(code)  # codes in the names' sorted order: sorted codes = sorted names
    remap = np.empty(len(ordered), dtype=np.int32)
    remap[[code[n] for n in ordered]] = np.arange(len(ordered), dtype=np.int32)
    doc_codes = remap[np.frombuffer(codes, dtype=np.int32)] if codes else np.zeros(0, np.int32)
    doc_names = NameLists(list(texts), ordered, np.frombuffer(offsets, dtype=np.int64),
                          doc_codes)
    return doc_names, df, description


def build_vocabulary(texts: dict, rows, cfg) -> Vocabulary:
    """The vocabulary of the extracted ``rows`` (module docstring), read once in corpus
    order, a chunk at a time (``rows``: a dict or a :class:`~.rows.CheckpointRows`)."""
    doc_names, df, description = _read_names(texts, rows)
    max_df = cfg.max_doc_share * len(texts)
    stop_entities = sorted((n for n, c in df.items() if c > max_df), key=lambda n: (-df[n], n))
    stop_set = set(stop_entities)
    # (an empty vocabulary gives an artifact with no clusters; every document is then listed
    # in docs_without_clusters with its reason, rather than lost in an error)
    frequent = sorted(n for n, c in df.items() if c >= cfg.min_doc_freq and n not in stop_set)
    generic: list = []
    test = None
    if cfg.generic_max_ridf is not None:
        from .specificity import GenericTest, WordStats
        test = GenericTest(WordStats.of_texts(texts[d] for d in sorted(texts)),
                           max_ridf=cfg.generic_max_ridf,
                           min_doc_share=cfg.generic_min_doc_share)
        generic = [n for n in frequent if test.is_generic(n)]
    generic_set = set(generic)
    names = [n for n in frequent if n not in generic_set]
    return Vocabulary(doc_names, df, stop_entities, names, description, generic, test)


def embedding_inputs(names: list, description: dict, context: str) -> list[str]:
    """The texts embedded for ``names``: ``"name: description"`` or the bare name."""
    if context == "name":
        return list(names)
    return [f"{n}: {description[n]}" if description.get(n) else n for n in names]


def embed_vocabulary(names: list, cfg, work: str | None, progress: bool,
                     description: dict | None = None, engine=None) -> np.ndarray:
    """Unit embeddings of ``names`` with their context (one row each), cached in ``work`` under
    a key of the model and the embedded texts; the temporary file is unique per process.
    ``engine`` (:mod:`.engine`; default: this process) computes them."""
    from .embed import cached_array
    from .engine import LocalEngine

    inputs = embedding_inputs(names, description or {}, cfg.entity_context)
    if cfg.entity_embedding == "static":  # a lookup: no engine, no cache
        from .embed import embed_with
        return embed_with(inputs, cfg.embedding_model, "static")
    engine = engine if engine is not None else LocalEngine(progress=progress)
    key = settings_hash({"model": cfg.embedding_model, "inputs": inputs})
    path = os.path.join(work, f"embeddings-{key}.npy") if work is not None else None
    return cached_array(path, lambda: engine.embed(
        inputs, cfg.embedding_model, 64 if cfg.entity_context != "name" else 256))
