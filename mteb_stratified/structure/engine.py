"""Where the per-document steps of the structure pipeline run: an *engine*.

:func:`~.pipeline.build_structure` hands two steps to its engine, the ones whose cost grows
with the corpus and that need no other document:

* ``extract(chunks, texts, extractor, cfg)`` yields the rows of
  :func:`~.extraction.extract_rows` (extraction and normalisation) for each chunk of document
  ids, in any order; the pipeline checkpoints each row as it arrives and keeps one row per
  document;
* ``embed(inputs, model, batch_size, precision="float32")`` returns the unit embeddings of
  ``inputs`` (one row each, order kept), encoded in the batches of
  :func:`~.embed.length_batches` (``precision``: ``float32``, ``bf16`` or ``int8``, as
  :func:`~.embed.embed_texts`; the pipeline passes it only when it is not ``float32``, so an
  engine that takes no keyword keeps working for float32).  The keyword was ``int8=True``
  before bf16 came (2026-12-05): an engine written for that form must take ``precision``.

The vocabulary filters, the graph and Leiden need the whole corpus and run in the calling
process with any engine.  An engine changes where the work runs, never its result: the same
rows and the same embedding bits, so the artifact is byte-identical
(tests/adapters/test_ray_engine.py checks the Ray engine against this one).

:class:`LocalEngine` (the default) runs both steps in this process.  The Ray engine
(:mod:`mteb_stratified.adapters.ray_engine`, the ``[ray]`` extra) runs them as Ray Data
pipelines on a cluster's workers.
"""

from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

__all__ = ["LocalEngine"]


class LocalEngine:
    """Both per-document steps in this process (the single-machine path)."""

    name = "local"
    progress_bars = False  # the pipeline shows its own

    def __init__(self, *, progress: bool = False) -> None:
        self.progress = bool(progress)

    def extract(self, chunks: Sequence[list], texts: dict, extractor, cfg) -> Iterator[list]:
        """The rows of each chunk; an extractor with ``extract_batches`` (spaCy's) parses every
        chunk in one stream, so its worker processes start once (same rows)."""
        from .extraction import extract_rows, normalised_rows
        batches = getattr(extractor, "extract_batches", None)
        if batches is None:
            for chunk in chunks:
                yield extract_rows(extractor, chunk, texts, cfg)
            return
        raw = batches([[texts[d] for d in chunk] for chunk in chunks])
        for chunk, entities in zip(chunks, raw):
            yield normalised_rows(chunk, entities, {}, texts, cfg)

    def embed(self, inputs: Sequence[str], model: str | None, batch_size: int, *,
              precision: str = "float32") -> np.ndarray:
        from .embed import embed_texts
        return embed_texts(inputs, model, batch_size=batch_size, show_progress=self.progress,
                           precision=precision)

    def summary(self) -> dict:
        return {"engine": self.name}
