"""Step 2 of the structure pipeline: the vocabulary to cluster, and its embeddings.

* **filter by document frequency**: names in fewer than ``min_doc_freq`` documents are not
  clustered (they cannot tie documents together by identity; they stay in ``doc_entities``);
  names in more than ``max_doc_share`` of the documents are corpus stop-entities ("study",
  "result") and are dropped everywhere (listed in the metadata);
* **embed** the clustered vocabulary (sentence-transformers; the packaged MiniLM by default),
  cached per vocabulary in the work folder.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .fingerprint import settings_hash

__all__ = ["Vocabulary", "build_vocabulary", "embed_vocabulary"]


@dataclass(frozen=True)
class Vocabulary:
    """The names of every document, their document frequencies, and what gets clustered."""

    doc_names: dict        # doc_id -> normalised names (extraction order)
    doc_freq: Counter      # name -> documents that contain it
    stop_entities: list    # too frequent: dropped everywhere, most frequent first
    names: list            # the clustered vocabulary, sorted
    description: dict      # name -> its first description


def build_vocabulary(texts: dict, rows: dict, cfg) -> Vocabulary:
    """The vocabulary of the extracted ``rows`` (module docstring)."""
    doc_names = {d: [e[0] for e in rows[d]["entities"]] for d in texts}
    df: Counter = Counter()
    for d in texts:
        df.update(doc_names[d])
    max_df = cfg.max_doc_share * len(texts)
    stop_entities = sorted((n for n, c in df.items() if c > max_df), key=lambda n: (-df[n], n))
    stop_set = set(stop_entities)
    # (an empty vocabulary gives an artifact with no clusters; every document is then listed
    # in docs_without_clusters with its reason, rather than lost in an error)
    names = sorted(n for n, c in df.items() if c >= cfg.min_doc_freq and n not in stop_set)
    description: dict = {}
    for d in texts:
        for n, desc in rows[d]["entities"]:
            description.setdefault(n, desc)
    return Vocabulary(doc_names, df, stop_entities, names, description)


def embed_vocabulary(names: list, cfg, work: str | None, progress: bool) -> np.ndarray:
    """Unit embeddings of ``names`` (one row each), cached in ``work`` under a key of the model
    and the names; the temporary file is unique per process."""
    from .embed import embed_texts

    key = settings_hash({"model": cfg.embedding_model, "names": names})
    if work is not None:
        path = os.path.join(work, f"embeddings-{key}.npy")
        if os.path.exists(path):
            return np.load(path)
    emb = embed_texts(names, cfg.embedding_model, show_progress=progress)
    if work is not None:
        tmp = os.path.join(work, f"embeddings-{key}.{os.getpid()}.tmp.npy")
        np.save(tmp, emb)
        os.replace(tmp, path)
    return emb
