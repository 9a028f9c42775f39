"""The evaluation context of a strata block: the structure artifact, the dataset and its
stratified queries, loaded once per process.

``stratify`` and ``report`` only map their flags onto :func:`load_context`; what is loaded, and
when the query entities are extracted, is decided here:

* no ``structure`` or ``dataset`` and the ``test`` split: the bundled NFCorpus, whose test
  queries' entities (and soft J) are precomputed, so no extractor or model runs;
* else the artifact (``structure``, or the bundled one) and the BEIR ``dataset`` folder (or the
  bundled NFCorpus), checked against each other, the queries' entities extracted with the
  artifact's extractor.  With a ``structure`` folder, that extractor talks to the user's
  ``endpoint`` (its settings, never those recorded in the artifact: an artifact may come from
  someone else); a recorded embedding model other than the packaged one is loaded only when it
  is the user's ``embedding_model``.

The last context is kept for the process, keyed on every argument but ``notify``: a second
command in one process with the same arguments (``report`` after ``stratify``, in a notebook or
a test) neither reloads the dataset nor extracts the query entities again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

__all__ = ["Context", "load_context", "clear_context", "resolve_context", "no_step"]


@dataclass(frozen=True)
class Context:
    """``(artifact, dataset, strata)``: unpacks like that tuple."""

    artifact: object
    dataset: object
    strata: object

    def __iter__(self):
        return iter((self.artifact, self.dataset, self.strata))


_LAST: dict = {}


def clear_context() -> None:
    """Forget the kept context (the next :func:`load_context` loads afresh)."""
    _LAST.clear()


def load_context(structure: str | None = None, dataset: str | None = None, *,
                 split: str = "test", alignment: str = "soft",
                 embedding_model: str | None = None, endpoint: dict | None = None,
                 notify: Callable[[str], None] | None = None) -> Context:
    """The :class:`Context` for an artifact folder (``structure``; None: the bundled NFCorpus
    one), a BEIR folder (``dataset``; None: the bundled NFCorpus) and ``split`` (module
    docstring).  ``endpoint``: the user's LLM endpoint settings
    (:func:`~mteb_stratified.structure.query_entities.query_extractor`), used with a
    ``structure`` folder; ``embedding_model``: the model the user allows; ``notify`` gets the
    one-line notices."""
    key = (structure, dataset, split, alignment, embedding_model,
           tuple(sorted((k, _hashable(v)) for k, v in (endpoint or {}).items())))
    if key not in _LAST:
        _LAST.clear()
        _LAST[key] = _load(structure, dataset, split, alignment, embedding_model, endpoint,
                           notify)
    return _LAST[key]


def _hashable(value):
    """``value`` for the cache key: itself when hashable, else its repr."""
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


def _load(structure, dataset, split, alignment, embedding_model, endpoint, notify) -> Context:
    from ..io import bundled_path, load_beir
    from ..structure.artifact import StructureArtifact
    from ..structure.query_entities import embedding_model_of, query_extractor
    from .dataset import strata_for_dataset

    if structure is None and dataset is None and split == "test":
        from .bundled import bundled_strata

        artifact, strata = bundled_strata("nfcorpus", "test", alignment)
        return Context(artifact, load_beir(bundled_path("nfcorpus"), "test"), strata)
    art = (StructureArtifact.bundled("nfcorpus") if structure is None
           else StructureArtifact.load(structure))
    _check_mass(art, structure)  # before the corpus is read and the queries extracted
    if alignment == "soft":  # a model the user did not allow is refused before any extraction
        embedding_model_of(art, embedding_model)
    folder = dataset or bundled_path("nfcorpus")
    data = load_beir(folder, split)
    art.check_corpus(data.corpus, source=folder)
    # the queries' extractor: the artifact's recorded kind, with the user's endpoint for a
    # structure folder (never the one the artifact records) and the model the user allows
    extractor = query_extractor(art, None if structure is None else dict(endpoint or {}),
                                embedding_model=embedding_model, notify=notify)
    return Context(art, data, strata_for_dataset(art, data, check_corpus=False,
                                                 alignment=alignment, extractor=extractor,
                                                 embedding_model=embedding_model))


def _check_mass(art, structure: str | None) -> None:
    """An :class:`InputError` naming ``clusters.jsonl.gz`` when every cluster has mass 0: the
    corpus-weighted estimates weigh the strata by it."""
    import os

    from ..core.errors import InputError
    from ..structure.schema import REBUILD_FIX

    if any(mass > 0 for mass in art.cluster_mass.values()):
        return
    folder = os.path.dirname(art.source) if art.source else structure
    raise InputError(f"every one of the {art.n_clusters} clusters has mass 0, and the "
                     "corpus-weighted estimates weigh the strata by it",
                     source=os.path.join(folder, "clusters.jsonl.gz") if folder else None,
                     fix=REBUILD_FIX)


def resolve_context(context, split: str):
    """``(artifact, dataset, strata)`` of ``context``, as the library entry points take it
    (``stratify_results``, ``report.build``): a :class:`Context`, a callable returning one
    (called once, after every input is checked), or None for the bundled NFCorpus of
    ``split``."""
    if context is None:
        return load_context(split=split)
    return context() if callable(context) else context


def no_step(label: str):
    """The ``steps`` of an entry point when the caller shows no progress: a context manager
    that does nothing."""
    import contextlib

    return contextlib.nullcontext()
