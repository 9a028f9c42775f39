"""What the strata read from a structure artifact (:mod:`mteb_stratified.stratification.dataset`
owns both readers): m_d(c) with empty rows for unclustered documents, the stored cut-points of
either J or the fixed fallback, and the J variants."""

from types import SimpleNamespace

import pytest

from mteb_stratified.core import DEFAULT_BINS, InputError
from mteb_stratified.stratification import dataset


def _artifact(bins):
    """The two fields the readers take from a structure artifact."""
    return SimpleNamespace(doc_cluster_weights={"d1": {1: 0.25, 0: 0.75}}, n_clusters=3,
                           bins=bins)


def test_cluster_weights_give_every_corpus_document_a_row():
    w = dataset.cluster_weights(_artifact({}), ["d0", "d1", "d2"])
    assert w.doc_ids == ("d0", "d1", "d2") and w.n_clusters == 3
    assert w.to_csr().toarray().tolist() == [[0, 0, 0], [0.75, 0.25, 0], [0, 0, 0]]


def test_corpus_bins_stored_for_each_alignment_else_the_fallback():
    stored = {"dispersion": [0.1, 0.2], "alignment": [0.3, 0.4], "alignment_soft": [0.5, 0.6],
              "source": "reference"}
    exact = dataset.corpus_bins(_artifact(stored))
    soft = dataset.corpus_bins(_artifact(stored), alignment="soft")
    assert (exact.alignment, soft.alignment, soft.dispersion) == ((0.3, 0.4), (0.5, 0.6),
                                                                   (0.1, 0.2))
    fallback = dataset.corpus_bins(_artifact({}), alignment="soft")
    assert fallback.alignment == DEFAULT_BINS.alignment and "fallback" in fallback.source
    with pytest.raises(InputError, match="no soft-J cut-points"):
        dataset.corpus_bins(_artifact({"dispersion": [0.1, 0.2], "alignment": [0.3, 0.4]}),
                            alignment="soft")
    with pytest.raises(InputError, match="unknown alignment 'fuzzy'"):
        dataset.check_alignment("fuzzy")
    assert [dataset.check_alignment(a) for a in dataset.ALIGNMENTS] == ["exact", "soft"]
