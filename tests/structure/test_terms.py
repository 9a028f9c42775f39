"""A cluster's distinctive terms (class-based TF-IDF), its label, its central documents, and the
NPMI yardstick, checked against brute force and against gensim's CoherenceModel."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mteb_stratified.io import bundled_path, load_beir
from mteb_stratified.io.corpus_text import doc_text
from mteb_stratified.structure import StructureArtifact
from mteb_stratified.structure.quality import term_coherence, term_npmi
from mteb_stratified.structure.terms import (central_documents, class_terms, label_of,
                                             term_counts)

SLICE = 400  # documents of the real NFCorpus slice (sorted ids)


@pytest.fixture(scope="module")
def nfcorpus_slice():
    """The first SLICE NFCorpus documents (sorted ids), their term counts, and each one's leaf
    in the bundled artifact, renumbered 0..k-1 within the slice."""
    corpus = load_beir(bundled_path("nfcorpus"), "test").corpus
    ids = sorted(corpus)[:SLICE]
    texts = {d: doc_text(corpus[d]) for d in ids}
    art = StructureArtifact.bundled("nfcorpus")
    own = [max(art.doc_cluster_weights[d].items(), key=lambda kv: kv[1])[0] for d in ids]
    _, labels = np.unique(own, return_inverse=True)
    return texts, term_counts(texts), labels.astype(np.int64)


def brute_ctfidf(counts: np.ndarray, names, labels, n_classes: int, top: int) -> list:
    """BERTopic's c-TF-IDF written out term by term with Python numbers, the top ``top``
    names of each class (largest weight first, ties by the name)."""
    n_docs, n_terms = counts.shape
    tf = [[0.0] * n_terms for _ in range(n_classes)]
    for d in range(n_docs):
        if labels[d] >= 0:
            for t in range(n_terms):
                tf[labels[d]][t] += float(counts[d, t])
    words = [sum(row) for row in tf]
    avg = sum(words) / n_classes
    out = []
    for c in range(n_classes):
        scored = []
        for t in range(n_terms):
            f_t = sum(tf[k][t] for k in range(n_classes))
            if tf[c][t] > 0:
                scored.append((-(tf[c][t] / words[c]) * math.log(1 + avg / f_t), str(names[t])))
        out.append([name for _, name in sorted(scored)[:top]])
    return out


def test_ctfidf_equals_bertopics_formula_written_out(nfcorpus_slice):
    texts, counts, labels = nfcorpus_slice
    ids = counts.doc_ids[:60]          # a sub-slice keeps the brute force small
    small = term_counts({d: texts[d] for d in ids})
    lab = labels[:60] % 4
    lab[7] = -1                        # a document in no class counts for none
    got = class_terms(small, lab, 4, top=10)
    assert got == brute_ctfidf(small.counts.toarray(), small.terms, lab, 4, 10)
    assert all(len(ts) == 10 for ts in got)


def test_terms_are_the_clusters_words_and_phrases_without_stop_words(nfcorpus_slice):
    _, counts, labels = nfcorpus_slice
    terms = class_terms(counts, labels, int(labels.max()) + 1)
    flat = [t for ts in terms for t in ts]
    assert all(len(ts) == 10 for ts in terms)
    assert any(" " in t for t in flat)                       # phrases (bigrams) are allowed
    assert not {"the", "and", "of", "with", "in"} & {w for t in flat for w in t.split()}
    assert not any(t[0].isdigit() for t in flat)             # a term starts with a letter


def test_a_label_takes_three_terms_that_repeat_no_word():
    assert label_of(["tea", "coffee", "green tea", "caffeine", "cup"]) == \
        "tea / coffee / caffeine"
    assert label_of(["breast cancer", "cancer", "women"]) == "breast cancer / women"
    assert label_of([]) == ""
    assert label_of(["cells", "cell", "cancer", "class", "glass"]) == "cells / cancer / class"
    assert label_of(["nut", "nuts", "consumption", "nut consumption", "almonds"]) == \
        "nut / consumption / almonds"


def test_central_documents_are_the_nearest_to_their_class_in_term_space(nfcorpus_slice):
    from sklearn.feature_extraction.text import TfidfTransformer

    _, counts, labels = nfcorpus_slice
    n = int(labels.max()) + 1
    got = central_documents(counts, labels, n, top=3)
    tfidf = TfidfTransformer().fit_transform(counts.counts).toarray()
    for c in range(n):
        idx = np.flatnonzero(labels == c)
        centre = tfidf[idx].sum(axis=0)
        centre /= np.linalg.norm(centre)
        cos = np.round(tfidf[idx] @ centre, 12)
        assert got[c] == [int(i) for i in idx[np.argsort(-cos, kind="stable")][:3]]
        assert all(labels[i] == c for i in got[c])


def test_npmi_equals_gensims_c_npmi_on_a_real_slice(nfcorpus_slice):
    """The cross-check: gensim's CoherenceModel(coherence="c_npmi") with one window per document
    (window_size = the longest document) gives each cluster's NPMI within 0.01."""
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel

    from mteb_stratified.structure.terms import vectoriser

    texts, counts, labels = nfcorpus_slice
    n = int(labels.max()) + 1
    topics = class_terms(counts, labels, n)
    analyse = vectoriser().build_analyzer()
    tokens = [analyse(texts[d]) for d in counts.doc_ids]    # the same words and phrases
    model = CoherenceModel(topics=topics, texts=tokens, dictionary=Dictionary(tokens),
                           coherence="c_npmi", window_size=max(map(len, tokens)), processes=1)
    theirs = model.get_coherence_per_topic()
    presence = counts.presence().tocsc()
    index = {t: i for i, t in enumerate(counts.terms.tolist())}
    ours = [term_npmi(presence, [index[t] for t in ts]) for ts in topics]
    assert len(ours) == n >= 5
    assert max(abs(a - b) for a, b in zip(ours, theirs)) <= 0.01
    # and the document-weighted mean the artifact reports
    sizes = np.bincount(labels, minlength=n)
    mean = term_coherence(list(zip(topics, sizes)), presence, index)["npmi_weighted"]
    assert mean == pytest.approx(float(np.average(theirs, weights=sizes)), abs=0.01)
    assert any(v < 0.9 for v in ours) and any(v > 0 for v in ours)   # not a constant


def test_npmi_brute_force_on_hand_counted_documents():
    from scipy import sparse

    # 4 documents x 3 terms: a and b always together (NPMI 1), c with neither (near -1 + ...)
    presence = sparse.csc_matrix(np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1], [0, 0, 0]]))
    assert term_npmi(presence, [0, 1]) == pytest.approx(1.0, abs=1e-9)
    eps = 1e-12
    want = math.log(eps / (0.5 * 0.25)) / -math.log(eps)
    assert term_npmi(presence, [0, 2]) == pytest.approx(want)
    assert math.isnan(term_npmi(presence, [0]))
    figures = term_coherence([(["a", "b"], 3), (["a", "c"], 1)], presence,
                             {"a": 0, "b": 1, "c": 2})
    assert figures["npmi_weighted"] == pytest.approx((3 * 1.0 + want) / 4)
    assert figures["grab_bag_share"] == pytest.approx(0.25)


def test_a_corpus_with_no_shared_word_has_no_terms_and_no_crash():
    counts = term_counts({"a": "alpha beta", "b": "gamma delta"})
    assert counts.counts.shape == (2, 0)
    assert class_terms(counts, [0, 1], 2) == [[], []]
    assert central_documents(counts, [0, 1], 2) == [[0], [1]]


def test_counting_by_chunks_gives_the_vectorisers_matrix(nfcorpus_slice):
    """term_counts counts a chunk of documents at a time; the matrix and its columns are those
    of one fit_transform over all documents (terms in >= MIN_DF documents, sorted)."""
    from mteb_stratified.structure.terms import MIN_DF, vectoriser

    texts, whole, _ = nfcorpus_slice
    vec = vectoriser(min_df=MIN_DF)
    want = vec.fit_transform([texts[d] for d in sorted(texts)]).tocsr()
    for chunk in (37, 150, 10_000):
        got = term_counts(texts, chunk=chunk)
        assert got.terms.tolist() == vec.get_feature_names_out().tolist()
        assert (got.counts != want).nnz == 0 and got.counts.shape == want.shape
    # a term in MIN_DF documents that fall in different chunks is kept
    split = term_counts({"a": "zebra alpha", "b": "zebra beta", "c": "gamma"}, chunk=1)
    assert split.terms.tolist() == ["zebra"]
    assert split.counts.toarray().ravel().tolist() == [1, 1, 0]
