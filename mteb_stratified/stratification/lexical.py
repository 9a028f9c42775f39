"""J next to the obvious axis: lexical containment, and whether J adds to it (ours).

J (:mod:`mteb_stratified.core.stats.strata`) is the share of the query's *entities* its relevant
documents contain.  The obvious rival is the same share of the query's *words*:

* **lexical containment**  L(q) = (1 / n_q) Σ_{d∈rel(q)} |W(q) ∩ W(d)| / |W(q)|,  with W(·)
  the content words (lower case, singular, :func:`~mteb_stratified.structure.specificity
  .word_tokens`, stop words left out); NaN for a query without content words;
* **does J add to it?**  The partial Spearman correlation of J with the per-query measure given
  |rel| and L: ranks of J and of the measure are residualised on the ranks of |rel| and L by
  least squares, and r is the Pearson correlation of the residuals; p from Student t with
  n − 4 degrees of freedom.  J "adds" when p ≤ 0.05 and r > 0.

A bare J–measure correlation says little on its own: J's signal could be lexical overlap, which
BM25 scores directly (measured on a held-out corpus: a partial ρ of 0.40 given |rel| fell to
−0.01 given lexical containment too).  J "adds" when p ≤ 0.05 and r > 0; otherwise the report
says there is no evidence that it adds (not that it adds nothing).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.options import ALPHA

__all__ = ["content_words", "lexical_containment", "partial_spearman", "alignment_adds"]


def content_words(text: str) -> set:
    """W(text): lower-case singular words, stop words left out (module docstring)."""
    from ..structure.normalise import STOP_WORDS
    from ..structure.specificity import word_tokens

    return {w for w in word_tokens(text) if w not in STOP_WORDS}


def lexical_containment(queries: dict, corpus: dict, qrels: dict, qids, level: float = 1,
                        *, doc_words: dict | None = None) -> np.ndarray:
    """L(q) for each of ``qids`` (module docstring); ``doc_words`` caches W(d) across calls."""
    from ..io.corpus_text import doc_text

    cache = doc_words if doc_words is not None else {}
    out = np.full(len(qids), np.nan)
    for i, q in enumerate(qids):
        words = content_words(queries.get(q, ""))
        rel = [d for d, g in qrels.get(q, {}).items() if g >= level and d in corpus]
        if not words or not rel:
            continue
        total = 0.0
        for d in rel:
            if d not in cache:
                cache[d] = content_words(doc_text(corpus[d]))
            total += len(words & cache[d]) / len(words)
        out[i] = total / len(rel)
    return out


def partial_spearman(x, y, covariates) -> dict:
    """``{"partial", "p", "n"}``: the Spearman correlation of x and y given the covariates
    (ranks residualised on the covariates' ranks); entries with a NaN anywhere left out."""
    from scipy import stats

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    Z = [np.asarray(z, dtype=np.float64) for z in covariates]
    ok = np.isfinite(x) & np.isfinite(y)
    for z in Z:
        ok &= np.isfinite(z)
    n = int(ok.sum())
    k = len(Z)
    if n < k + 5 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return {"partial": None, "p": None, "n": n}
    A = np.column_stack([np.ones(n)] + [stats.rankdata(z[ok]) for z in Z])

    def resid(v):
        r = stats.rankdata(v[ok])
        beta, *_ = np.linalg.lstsq(A, r, rcond=None)
        return r - A @ beta

    ex, ey = resid(x), resid(y)
    if not (ex.std() > 0 and ey.std() > 0):
        return {"partial": None, "p": None, "n": n}
    r = float(np.corrcoef(ex, ey)[0, 1])
    df = max(n - 2 - k, 1)
    t = r * math.sqrt(df / max(1 - r * r, 1e-12))
    return {"partial": r, "p": float(2 * stats.t.sf(abs(t), df)), "n": n}


def alignment_adds(alignment, lexical, n_relevant, values) -> dict:
    """Does J add to lexical containment for these per-query ``values``?  (module docstring)
    JSON-ready, with a sentence for the report."""
    from scipy import stats

    given_rel = partial_spearman(alignment, values, [n_relevant])
    given_both = partial_spearman(alignment, values, [n_relevant, lexical])
    lex = partial_spearman(lexical, values, [n_relevant])
    a, L = np.asarray(alignment, float), np.asarray(lexical, float)
    ok = np.isfinite(a) & np.isfinite(L)
    rho = float(stats.spearmanr(a[ok], L[ok])[0]) if ok.sum() >= 5 and np.ptp(a[ok]) \
        and np.ptp(L[ok]) else None
    r, p = given_both["partial"], given_both["p"]
    if r is None:
        verdict = "J could not be compared with lexical containment on these queries"
    elif p <= ALPHA and r > 0:
        verdict = (f"J adds to lexical overlap: given |rel| and lexical containment its partial "
                   f"Spearman correlation with the measure is {r:.2f} (p = {p:.3g})")
    else:
        verdict = (f"no evidence that J adds to lexical overlap here: given |rel| and lexical "
                   f"containment its partial Spearman correlation with the measure is {r:.2f} "
                   f"(p = {p:.3g}), so J's bins may say no more than the query's words do")
    return {"partial_given_rel": given_rel, "partial_given_rel_and_lexical": given_both,
            "lexical_partial_given_rel": lex, "rho_alignment_lexical": rho, "verdict": verdict,
            "rule": "partial Spearman correlation: ranks residualised on the ranks of |rel| "
                    "(and of lexical containment)"}
