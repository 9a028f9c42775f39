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
#: Documents counted at a time by :func:`term_counts`.
COUNT_CHUNK = 20_000
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


def _chunk_entries(texts: list, words: dict, pairs: dict) -> tuple:
    """One chunk's ``(doc, term, count)`` entries, unigrams and bigrams apart, with the
    vectoriser's analyser (:func:`vectoriser`: lower case, :data:`TOKEN_PATTERN`, English stop
    words out, then the bigrams of the tokens left), written with token ids: each distinct
    word gets an id in ``words`` and each distinct pair of ids one in ``pairs``, so no bigram
    string is made per occurrence."""
    import re
    from itertools import chain

    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    find, stop = re.compile(TOKEN_PATTERN).findall, ENGLISH_STOP_WORDS
    tokens = [[w for w in find(t.lower()) if w not in stop] for t in texts]
    lens = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    wid = np.fromiter((words.setdefault(w, len(words)) for w in chain.from_iterable(tokens)),
                      dtype=np.int64, count=int(lens.sum()))
    doc = np.repeat(np.arange(len(texts), dtype=np.int64), lens)
    same = doc[1:] == doc[:-1]                       # a bigram never spans two documents
    code = (wid[:-1][same] << 32) | wid[1:][same]
    uniq, inv = np.unique(code, return_inverse=True)
    pid = np.fromiter((pairs.setdefault(c, len(pairs)) for c in uniq.tolist()),
                      dtype=np.int64, count=uniq.size)
    out = []
    for d, t, width in ((doc, wid, len(words)), (doc[1:][same], pid[inv], len(pairs))):
        key, n = np.unique(d * width + t, return_counts=True)
        # int32: 12 bytes an entry (a million documents hold ~10^8 of them)
        out.append(((key // width).astype(np.int32), (key % width).astype(np.int32),
                    n.astype(np.int32)))
    return out


def term_counts(texts: dict, *, min_df: int = MIN_DF, chunk: int = COUNT_CHUNK) -> TermCounts:
    """Count the terms of every document of ``texts`` (``{doc_id: text}``, ids sorted): the
    matrix of the vectoriser's ``fit_transform`` (:func:`vectoriser`; terms in ``min_df``
    documents, columns sorted by term), counted ``chunk`` documents at a time by
    :func:`_chunk_entries` (tested equal).  The vectoriser itself makes a string for every
    bigram occurrence and holds every token occurrence of the corpus at once; this is about
    5x faster and holds one chunk's tokens."""
    from scipy import sparse

    ids = sorted(texts)
    min_df = min(min_df, len(ids))
    words: dict = {}
    pairs: dict = {}
    parts = []
    for lo in range(0, len(ids), chunk):
        entries = _chunk_entries([texts[d] for d in ids[lo:lo + chunk]], words, pairs)
        parts.append([(r + np.int32(lo), c, n) for r, c, n in entries])
    df = [np.zeros(len(words), dtype=np.int64), np.zeros(len(pairs), dtype=np.int64)]
    for part in parts:
        for kind, (_, c, _) in enumerate(part):
            df[kind] += np.bincount(c, minlength=df[kind].size)
    word_list = list(words)
    names = [word_list[i] for i in np.flatnonzero(df[0] >= min_df).tolist()]
    kept_pairs = np.flatnonzero(df[1] >= min_df)
    pair_codes = np.fromiter(pairs, dtype=np.int64, count=len(pairs))[kept_pairs]
    names += [f"{word_list[c >> 32]} {word_list[c & 0xFFFFFFFF]}" for c in pair_codes.tolist()]
    if not names:  # no term in min_df documents (a tiny or empty-worded corpus)
        return TermCounts(ids, sparse.csr_matrix((len(ids), 0), dtype=np.int64),
                          np.array([], dtype=str))
    order = sorted(range(len(names)), key=names.__getitem__)      # the vectoriser's order
    column = [np.full(len(words), -1, dtype=np.int64), np.full(len(pairs), -1, dtype=np.int64)]
    rank = np.empty(len(names), dtype=np.int64)
    rank[order] = np.arange(len(names))
    n_words = int((df[0] >= min_df).sum())
    column[0][df[0] >= min_df] = rank[:n_words]
    column[1][kept_pairs] = rank[n_words:]
    # each chunk's rows, in the final columns, written into the preallocated CSR arrays one
    # chunk at a time (its entries freed as it goes): never every entry twice over
    total = sum(int(np.count_nonzero(column[kind][e[1]] >= 0))
                for part in parts for kind, e in enumerate(part))
    data = np.empty(total, dtype=np.int64)
    indices = np.empty(total, dtype=np.int32)
    indptr = np.zeros(len(ids) + 1, dtype=np.int64)
    at = 0
    for i, part in enumerate(parts):
        lo = i * chunk
        r = np.concatenate([e[0] for e in part]) - np.int32(lo)
        c = np.concatenate([column[kind][e[1]] for kind, e in enumerate(part)])
        n = np.concatenate([e[2] for e in part])
        parts[i] = None
        keep = c >= 0
        r, c, n = r[keep], c[keep], n[keep]
        o = np.lexsort((c, r))                          # by row, then column
        data[at:at + o.size], indices[at:at + o.size] = n[o], c[o]
        indptr[lo + 1:lo + 1 + min(chunk, len(ids) - lo)] = at + np.cumsum(
            np.bincount(r, minlength=min(chunk, len(ids) - lo)))
        at += o.size
        del r, c, n, o, keep
    counts = sparse.csr_matrix((data, indices, indptr), shape=(len(ids), len(names)))
    return TermCounts(ids, counts, np.array([names[i] for i in order], dtype=str))


def class_terms(counts: TermCounts, labels, n_classes: int, *, top: int = N_TERMS) -> list:
    """The ``top`` distinctive terms of each class ``0..n_classes-1`` by c-TF-IDF (module
    docstring); ``labels``: each document's class (−1: in none, left out of every class).

    Sparse: tf_{t,c} is held only where it is > 0 (a dense class × term table is 10^4 × 10^5
    floats at a million documents), and each class ranks only its candidates for the top:
    its terms whose weight is at least its ``top``-th largest (ties kept, then by term)."""
    from scipy import sparse

    labels = np.asarray(labels, dtype=np.int64)
    keep = labels >= 0
    n_docs = len(labels)
    if n_classes == 0 or counts.counts.shape[1] == 0:
        return [[] for _ in range(n_classes)]
    member = sparse.csr_matrix((np.ones(int(keep.sum()), dtype=counts.counts.dtype),
                                (labels[keep], np.flatnonzero(keep))),
                               shape=(max(n_classes, 1), n_docs))
    tf = (member @ counts.counts).tocsr()[:n_classes]    # integer sums: exact
    tf.sum_duplicates()
    tf.eliminate_zeros()
    tf.sort_indices()
    tf = tf.astype(np.float64)
    words = np.asarray(tf.sum(axis=1)).ravel()       # integer-valued: exact in any order
    f_t = np.asarray(tf.sum(axis=0)).ravel()
    avg = float(words.mean())
    idf = np.log(1.0 + avg / np.where(f_t > 0, f_t, 1.0))
    out = []
    for c in range(n_classes):
        lo, hi = tf.indptr[c], tf.indptr[c + 1]
        present = tf.indices[lo:hi]
        weight = tf.data[lo:hi] / (words[c] if words[c] > 0 else 1.0) * idf[present]
        if present.size > top:  # the candidates: weight >= the top-th largest
            kth = np.partition(weight, present.size - top)[present.size - top]
            sel = weight >= kth
            present, weight = present[sel], weight[sel]
        # largest weight first, ties by the term (lexsort: last key first)
        order = np.lexsort((counts.terms[present], -weight))
        out.append([str(t) for t in counts.terms[present[order[:top]]]])
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
    labels = np.asarray(labels, dtype=np.int64)
    tfidf = counts.tfidf
    # each class's rows, ascending, from one sort (not one pass over all labels per class)
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(n_classes + 1))
    out = []
    for c in range(n_classes):
        idx = order[bounds[c]:bounds[c + 1]]
        if tfidf is None or idx.size == 0:
            out.append(idx[:top].tolist())
            continue
        rows = tfidf[idx]
        # the centre over the class's own terms only (a dense row of every term, per class,
        # is 10^5 floats x 10^4 classes at a million documents), unless the class holds more
        # entries than there are terms (no sort then); each column summed over the rows in
        # order, as the dense sum does
        if rows.nnz > tfidf.shape[1]:
            at = rows.indices
            centre = np.bincount(at, weights=rows.data, minlength=tfidf.shape[1])
        else:
            cols, at = np.unique(rows.indices, return_inverse=True)
            centre = np.bincount(at, weights=rows.data, minlength=cols.size)
        centre /= max(float(np.sqrt(centre @ centre)), 1e-300)
        row_of = np.repeat(np.arange(idx.size), np.diff(rows.indptr))
        cos = np.bincount(row_of, weights=rows.data * centre[at], minlength=idx.size)
        # rounded, so that identical documents (NFCorpus has 40 pairs) tie exactly and the
        # lower row wins, whatever the order of the sparse sums
        cos = np.round(cos, 12)
        out.append(idx[np.lexsort((idx, -cos))][:top].tolist())
    return out
