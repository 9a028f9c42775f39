"""A cluster's distinctive terms: class-based TF-IDF of its documents against the rest.

The corpus documents (``title. text``) are counted by scikit-learn's ``CountVectorizer``
(:func:`term_counts`): lower case, words of at least two characters that start with a letter,
scikit-learn's English stop words out, unigrams and bigrams (a bigram never spans a stop word:
they are removed first), terms in at least :data:`MIN_DF` documents.  For a partition of the
documents into classes c (a level's clusters), with tf_{t,c} the count of term t in the
documents of c, **c-TF-IDF** (Grootendorst 2022, *BERTopic*, arXiv:2203.05794, eq. 1; BERTopic's
``ClassTfidfTransformer``) is::

    W_{t,c} = tf_{t,c} / Σ_t' tf_{t',c}  ·  ln(1 + A / f_t),   f_t = Σ_c tf_{t,c},
    A = the mean over classes of Σ_t tf_{t,c}  (words per class)

A class's ``terms`` are its :data:`N_TERMS` terms of largest W (ties by the term), those with
tf > 0 only.  Its **label** is made from them (:func:`label_of`): the first three that do not
repeat a word of an earlier one ("green tea" after "tea" is left out, and "nuts" after "nut"),
joined by " / ".

Why these settings (chosen on the corpus, never on queries): bigrams name what unigrams split
("breast cancer", "red meat"); a term in one document only cannot be a topic of a cluster and
its NPMI is undefined in spirit (it co-occurs with nothing), so ``MIN_DF = 2``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from .._optional import require

__all__ = ["N_TERMS", "MIN_DF", "LABEL_TERMS", "TermCounts", "term_counts", "class_terms",
           "label_of", "central_documents"]

#: Terms kept per cluster, documents a term must occur in, and terms in a label.
N_TERMS = 10
MIN_DF = 2
LABEL_TERMS = 3
#: Words (tokens) the vectoriser keeps: two or more characters, the first a letter.
TOKEN_PATTERN = r"(?u)\b[^\W\d_]\w+\b"


@dataclass(frozen=True, eq=False)
class TermCounts:
    """The document × term count matrix (CSR, rows in ``doc_ids`` order) and its terms."""

    doc_ids: list
    counts: object          # scipy.sparse.csr_matrix, int64
    terms: np.ndarray       # str, the column names

    def presence(self):
        """The 0/1 document × term matrix (a term occurs in the document or not)."""
        out = self.counts.copy()
        out.data = np.ones_like(out.data)
        return out

    @cached_property
    def tfidf(self):
        """The documents' TF-IDF rows (scikit-learn's ``TfidfTransformer``: smooth idf, l2
        rows; CSR), fitted once however many levels read it; None with no term."""
        if self.counts.shape[1] == 0:
            return None
        from sklearn.feature_extraction.text import TfidfTransformer
        return TfidfTransformer().fit_transform(self.counts).tocsr()


def vectoriser(min_df: int = MIN_DF):
    """The scikit-learn ``CountVectorizer`` of the module docstring."""
    require("sklearn", "structure")
    from sklearn.feature_extraction.text import CountVectorizer

    return CountVectorizer(lowercase=True, token_pattern=TOKEN_PATTERN, ngram_range=(1, 2),
                           stop_words="english", min_df=min_df, dtype=np.int64)


def term_counts(texts: dict, *, min_df: int = MIN_DF) -> TermCounts:
    """Count the terms of every document of ``texts`` (``{doc_id: text}``, ids sorted)."""
    ids = sorted(texts)
    vec = vectoriser(min_df=min(min_df, len(ids)))
    try:
        counts = vec.fit_transform([texts[d] for d in ids]).tocsr()
    except ValueError:  # no term in min_df documents (a tiny or empty-worded corpus)
        from scipy import sparse
        return TermCounts(ids, sparse.csr_matrix((len(ids), 0), dtype=np.int64),
                          np.array([], dtype=str))
    return TermCounts(ids, counts, np.asarray(vec.get_feature_names_out(), dtype=str))


def class_terms(counts: TermCounts, labels, n_classes: int, *, top: int = N_TERMS) -> list:
    """The ``top`` distinctive terms of each class ``0..n_classes-1`` by c-TF-IDF (module
    docstring); ``labels``: each document's class (−1: in none, left out of every class)."""
    from scipy import sparse

    labels = np.asarray(labels, dtype=np.int64)
    keep = labels >= 0
    n_docs = len(labels)
    member = sparse.csr_matrix((np.ones(int(keep.sum())), (labels[keep], np.flatnonzero(keep))),
                               shape=(max(n_classes, 1), n_docs))
    tf = np.asarray((member @ counts.counts).todense(), dtype=np.float64)[:n_classes]
    if tf.size == 0:
        return [[] for _ in range(n_classes)]
    words = tf.sum(axis=1, keepdims=True)
    f_t = tf.sum(axis=0)
    avg = float(words.mean())
    idf = np.log(1.0 + avg / np.where(f_t > 0, f_t, 1.0))
    weight = tf / np.where(words > 0, words, 1.0) * idf
    out = []
    for c in range(n_classes):
        present = np.flatnonzero(tf[c] > 0)
        # largest weight first, ties by the term (lexsort: last key first)
        order = present[np.lexsort((counts.terms[present], -weight[c, present]))]
        out.append([str(t) for t in counts.terms[order[:top]]])
    return out


def _stem(word: str) -> str:
    """A word without a plural s ("cells" -> "cell", not "class"), for :func:`label_of`."""
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") \
        else word


def label_of(terms, n: int = LABEL_TERMS) -> str:
    """The first ``n`` of ``terms`` that repeat no word of an earlier pick (a plural s aside:
    "nuts" repeats "nut"), joined " / "."""
    picked, seen = [], set()
    for t in terms:
        words = {_stem(w) for w in t.split()}
        if words & seen:
            continue
        picked.append(t)
        seen |= words
        if len(picked) == n:
            break
    return " / ".join(picked)


def central_documents(counts: TermCounts, labels, n_classes: int, *, top: int = 3) -> list:
    """The ``top`` documents of each class nearest its centre in term space, nearest first
    (ties, to 12 decimals, by row): the cosine between a document's TF-IDF row
    (:attr:`TermCounts.tfidf`) and the sum of its class's rows.  Model-free, so
    the same rule serves the document map and the entity map; ``labels`` as
    :func:`class_terms`."""
    from sklearn.preprocessing import normalize

    labels = np.asarray(labels, dtype=np.int64)
    tfidf = counts.tfidf
    out = []
    for c in range(n_classes):
        idx = np.flatnonzero(labels == c)
        if tfidf is None or idx.size == 0:
            out.append(idx[:top].tolist())
            continue
        rows = tfidf[idx]
        centre = normalize(np.asarray(rows.sum(axis=0)))
        # rounded, so that identical documents (NFCorpus has 40 pairs) tie exactly and the
        # lower row wins, whatever the order of the sparse sums
        cos = np.round(np.asarray(rows @ centre.T).ravel(), 12)
        out.append(idx[np.lexsort((idx, -cos))][:top].tolist())
    return out
