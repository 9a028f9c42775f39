"""Drop-in: make every retrieval/reranking task of an existing ``mteb.evaluate`` script tie-aware.

::

    import mteb, mteb_stratified.adapters.mteb as msa
    msa.patch()                      # or: with msa.patch(): ...
    mteb.evaluate(model, mteb.get_tasks(tasks=["SciFact", "NFCorpus"]))

After :func:`patch`, ``AbsTaskRetrieval._evaluate_subset`` (which ``AbsTaskReranking`` inherits)
wraps encoders in the exact search and adds the tie-aware keys (names: :mod:`mteb_stratified.naming`) to every
split's scores; the per-query file is written when ``prediction_folder`` is given.  Names,
results files and main scores are unchanged.  Tasks that override ``_evaluate_subset``
themselves are not reached; wrap them with :func:`~.tasks.tie_aware` instead.
:func:`unpatch` restores mteb.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["patch", "unpatch", "is_patched"]

_ORIGINAL: dict = {}


class _PatchHandle:
    """Returned by :func:`patch`; a context manager that unpatches on exit."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        unpatch()
        return False

    def __repr__(self) -> str:
        return f"<mteb_stratified patch: {'active' if is_patched() else 'inactive'}>"


def is_patched() -> bool:
    return bool(_ORIGINAL)


def patch() -> _PatchHandle:
    """Patch mteb's retrieval evaluation (idempotent); returns a context-manager handle."""
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    from .tasks import TieAwareRetrievalMixin, add_tie_scores, wrap_for_exact_search

    if _ORIGINAL:
        return _PatchHandle()
    original = AbsTaskRetrieval._evaluate_subset

    def _evaluate_subset(self, model, data_split, *, prediction_folder=None, **kwargs):
        if isinstance(self, TieAwareRetrievalMixin):  # already tie-aware: nothing to add
            return original(self, model, data_split, prediction_folder=prediction_folder, **kwargs)
        model, exact = wrap_for_exact_search(self, model)
        class_scores = type(self).task_specific_scores
        folder = Path(prediction_folder) if prediction_folder else None

        def task_specific_scores(scores, qrels, results, hf_split, hf_subset):
            base = class_scores(self, scores, qrels, results, hf_split=hf_split, hf_subset=hf_subset)
            return add_tie_scores(self, base, qrels, results, hf_split, hf_subset, exact=exact,
                                  prediction_folder=folder)

        self.task_specific_scores = task_specific_scores  # instance attribute shadows the class
        try:
            return original(self, model, data_split, prediction_folder=prediction_folder, **kwargs)
        finally:
            del self.task_specific_scores

    _ORIGINAL["_evaluate_subset"] = original
    AbsTaskRetrieval._evaluate_subset = _evaluate_subset
    return _PatchHandle()


def unpatch() -> None:
    """Undo :func:`patch` (no-op when not patched)."""
    if not _ORIGINAL:
        return
    from mteb.abstasks.retrieval import AbsTaskRetrieval

    AbsTaskRetrieval._evaluate_subset = _ORIGINAL.pop("_evaluate_subset")
