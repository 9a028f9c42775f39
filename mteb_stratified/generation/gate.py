"""The validity gate every ``generate`` run passes through: can the added queries be read as
evaluation data?  Four checks against real judgments, written to ``coverage.json`` (``gate``)
and ``coverage.md`` with a verdict line (its Markdown:
:func:`mteb_stratified.report.generation.gate_markdown`).

* **judge agreement with human qrels**: the run's own judge grades a sample of real (query,
  document) pairs of the evaluated split: for each of ``n_queries`` queries drawn with
  ``default_rng(seed)``, the top ``per_query`` documents of BM25 (a first-stage run), judged
  relevant when the qrels grade them ≥ 1 and non-relevant when they grade them 0 or not at all
  (unjudged counts as non-relevant, as trec_eval does).  Precision, recall and Cohen's κ =
  (p_o − p_e) / (1 − p_e) of the judge's "relevant" (grade ≥ 1) against the qrels'.  A
  selection run's judge is the human qrels themselves: not measured (κ = 1 by construction).
* **system-order agreement**: a panel (BM25, the packaged all-MiniLM-L6-v2 and the user's
  runs, built by :func:`panel_runs`; :func:`validity_gate` takes the runs) is scored
  (nDCG@10, tie-aware expected) on the original and on the added queries: Kendall τ of the
  panel's order on the two sets, each pair's mean difference with its paired 95% t interval
  on both, and the share of shared clusters (a cluster holding at least ``min_shared``
  queries of each set) where the pair's difference has the same sign.
* **lexical bias**: the share of queries whose BM25 rank-1 document is relevant, on the added
  and on the original queries (queries built from a document's own words would be found by
  BM25 first; the figure says whether they are).
* **the trivial baseline**: MSC and SCC of one document per targeted cluster (its own
  stratum: any document of it gives the same cluster counts), as many as were added, next to
  what the run reached: at cluster level that is the targeting alone, so a selection (whose
  queries land in the cluster they were taken for) equals it by construction, and a
  generation can hardly exceed it: the check shows that the coverage gain says nothing about
  the queries, it does not vouch for them.
* **pool bias** (stated, not tested): a generated query's qrels are judged on a pool of BM25
  (and dense, on the LLM path) candidates, and unjudged documents count as non-relevant, so
  the pool's own systems are favoured on the generated queries; a selection's qrels are the
  corpus' own human judgments.

**Verdict** (our thresholds): the run FAILS the gate when κ < 0.2 (at most "slight"
agreement on Landis & Koch's scale: the judge does not define relevance as people do) or
τ < 0 (the added queries reverse the panel's order on the real ones: any comparison on them
would mislead).  Otherwise it passes, and the lexical bias and baseline are stated beside.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from ..core import InputError
from .llm import BudgetExhausted
from .protocols import judgements

__all__ = ["KAPPA_MIN", "TAU_MIN", "GATE_QUERIES", "GATE_MIN_QUERIES", "PANEL_DEPTH", "POOL_BIAS",
           "judge_agreement", "judge_check", "judge_sample", "system_order", "lexical_bias",
           "dense_runs", "panel_runs", "validity_gate", "run_gate"]

#: κ below this: the judge agrees with the qrels at most slightly (Landis & Koch 1977).
KAPPA_MIN = 0.2
#: τ below this: the added queries reverse the panel's order on the original ones.
TAU_MIN = 0.0
_MEASURE = "nDCG@10"
#: The gate's judge sample: this many real queries (one batched judge request each) at most,
#: and at least GATE_MIN_QUERIES of them, or the judge is not measured.
GATE_QUERIES, GATE_MIN_QUERIES = 20, 5
#: The depth of the panel's BM25 and dense runs.
PANEL_DEPTH = 100
#: What the gate says of generated qrels ("pool bias", module docstring).
POOL_BIAS = ("the generated queries' qrels were judged on a BM25{dense} pool, unjudged "
             "documents count as non-relevant: the pool's systems are favoured on them")


def _kappa(judge_rel: np.ndarray, human_rel: np.ndarray) -> dict:
    j, h = judge_rel.astype(bool), human_rel.astype(bool)
    n = j.size
    tp, fp = int(np.sum(j & h)), int(np.sum(j & ~h))
    fn, tn = int(np.sum(~j & h)), int(np.sum(~j & ~h))
    po = (tp + tn) / n if n else math.nan
    pe = ((tp + fp) * (tp + fn) + (fn + tn) * (fp + tn)) / n ** 2 if n else math.nan
    kappa = (po - pe) / (1 - pe) if n and pe < 1 else math.nan
    return {"pairs": n, "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": tp / (tp + fp) if tp + fp else None,
            "recall": tp / (tp + fn) if tp + fn else None,
            "kappa": None if math.isnan(kappa) else float(kappa)}


def judge_agreement(judge, dataset, bm25, *, n_queries: int = 20, per_query: int = 4,
                    seed: int = 0) -> dict:
    """The judge against the qrels on real pairs (module docstring).  ``bm25``:
    ``{qid: [doc ids, best first]}`` of the evaluated queries."""
    qids = sorted(q for q in dataset.qrels if bm25.get(q))
    rng = np.random.default_rng(seed)
    pick = sorted(rng.choice(len(qids), size=min(n_queries, len(qids)), replace=False).tolist())
    judged, human, done, stopped = [], [], 0, None
    for i in pick:
        q = qids[i]
        docs = [(d, _text(dataset.corpus[d])) for d in bm25[q][:per_query]]
        try:
            grades, _ = judgements(judge.judge(dataset.queries[q], docs), judge)
        except BudgetExhausted as exc:   # keep the pairs graded so far, and say so
            stopped = f"the budget ran out after {done} of {len(pick)} queries ({exc})"
            break
        done += 1
        for d, _ in docs:
            g = grades.get(d)
            judged.append(g is not None and g >= 1)
            human.append(dataset.qrels[q].get(d, 0) >= 1)
    if not judged:
        raise BudgetExhausted(stopped or "no pair graded")
    out = _kappa(np.array(judged), np.array(human))
    out.update(queries=done, per_query=per_query, first_stage="BM25",
               unjudged="non-relevant", seed=seed, stopped=stopped)
    return out


def _text(doc: dict) -> str:
    from ..io.corpus_text import doc_text
    return doc_text(doc)


def _per_query(qrels: dict, run: dict) -> dict:
    from ..api import evaluate
    res = evaluate(qrels, run, [_MEASURE], missing="zero")
    return res[_MEASURE].per_query()


def _paired(a: np.ndarray, b: np.ndarray) -> dict:
    """a − b over the queries with its paired 95% t interval (:func:`..stratification.pairs
    .paired_t`); no interval below two queries."""
    from ..stratification.pairs import paired_t

    d = a - b
    if d.size < 2:
        return {"n": int(d.size), "difference": float(d.mean()) if d.size else math.nan,
                "ci_low": None, "ci_high": None, "p_value": None}
    t = paired_t(d, 0.95)
    return {"n": int(d.size), "difference": t["mean_difference"], "ci_low": t["ci_low"],
            "ci_high": t["ci_high"], "p_value": t["p_value"]}


def system_order(scores_real: dict, scores_added: dict, clusters_real: dict,
                 clusters_added: dict, *, min_shared: int = 2) -> dict:
    """Panel order on the original and the added queries (module docstring).

    ``scores_*``: ``{system: {qid: nDCG@10}}``; ``clusters_*``: ``{qid: cluster}``.
    """
    names = list(scores_real)
    means_r = {s: float(np.mean(list(scores_real[s].values()))) for s in names}
    means_a = {s: float(np.mean(list(scores_added[s].values()))) if scores_added[s] else
               math.nan for s in names}
    tau = None
    if len(names) >= 2 and not any(math.isnan(v) for v in means_a.values()):
        t = stats.kendalltau([means_r[s] for s in names], [means_a[s] for s in names]).statistic
        tau = None if t is None or math.isnan(t) else float(t)
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            row = {"a": a, "b": b}
            for key, scores, clusters in (("real", scores_real, clusters_real),
                                          ("added", scores_added, clusters_added)):
                qs = sorted(scores[a])
                row[key] = _paired(np.array([scores[a][q] for q in qs]),
                                   np.array([scores[b][q] for q in qs]))
            row["strata"] = _sign_agreement(scores_real, scores_added, clusters_real,
                                            clusters_added, a, b, min_shared)
            pairs.append(row)
    return {"systems": names, "mean_real": means_r, "mean_added": means_a, "kendall_tau": tau,
            "pairs": pairs, "measure": _MEASURE}


def _sign_agreement(sr, sa, cr, ca, a, b, min_shared) -> dict:
    def by_cluster(scores, clusters):
        out: dict = {}
        for q, c in clusters.items():
            if q in scores[a]:
                out.setdefault(c, []).append(scores[a][q] - scores[b][q])
        return out

    real, added = by_cluster(sr, cr), by_cluster(sa, ca)
    shared = sorted(c for c in set(real) & set(added)
                    if len(real[c]) >= min_shared and len(added[c]) >= min_shared)
    agree = sum(np.sign(np.mean(real[c])) == np.sign(np.mean(added[c])) for c in shared)
    return {"shared_clusters": len(shared), "same_sign": int(agree),
            "share": agree / len(shared) if shared else None, "min_shared": min_shared}


def lexical_bias(qrels: dict, bm25: dict) -> dict:
    """The share of queries whose BM25 rank-1 document is relevant (grade ≥ 1)."""
    hits = [bool(bm25.get(q)) and qrels[q].get(bm25[q][0], 0) >= 1 for q in qrels]
    return {"queries": len(hits), "rank1_relevant": float(np.mean(hits)) if hits else None}


def dense_runs(corpus: dict, query_sets: dict, model, cache_dir=None, *,
               depth: int = 100, show_progress: bool = False) -> dict:
    """``{name: run}``: cosine top-``depth`` of the embedding ``model`` (the packaged MiniLM)
    for each ``{qid: text}`` of ``query_sets``; the corpus embeddings are the pool's
    (:func:`.pool.corpus_embeddings`: the structure's document embeddings, from the user's
    embedding cache when a command embedded the corpus before; with that cache off, cached in
    ``cache_dir``; ``show_progress``: a bar while they are computed)."""
    from ..structure.embed import embed_texts
    from .pool import corpus_embeddings

    ids = sorted(corpus)
    docs = corpus_embeddings(corpus, ids, model, cache_dir, show_progress=show_progress)
    out = {}
    for name, queries in query_sets.items():
        qids = sorted(queries)
        run = {}
        if qids:
            sims = embed_texts([queries[q] for q in qids], model) @ docs.T
            for i, q in enumerate(qids):
                top = np.argsort(-sims[i], kind="stable")[:depth]
                run[q] = {ids[j]: float(sims[i, j]) for j in top}
        out[name] = run
    return out


def _ranked(run: dict) -> dict:
    """``{qid: [doc ids, best score first, ties by id]}`` of a run."""
    return {q: [d for d, _ in sorted(r.items(), key=lambda x: (-x[1], x[0]))]
            for q, r in run.items()}


def judge_check(judge, dataset, bm25_run: dict, *, note: str | None = None, seed: int = 0,
                n_queries: int = 20, per_query: int = 4) -> dict:
    """The gate's judge entry: :func:`judge_agreement` on the BM25 ``bm25_run`` of the
    evaluated queries, or ``{"measured": False, "why": note}`` without a judge (an LLM judge's
    sample, ``n_queries`` requests with the batched judge, is paid from its budget)."""
    if judge is None:
        return {"measured": False, "why": note}
    ranked = _ranked(bm25_run)
    return {"measured": True, **judge_agreement(judge, dataset, ranked, n_queries=n_queries,
                                                per_query=per_query, seed=seed)}


def validity_gate(dataset, added_queries: dict, added_qrels: dict, added_clusters: dict,
                  real_clusters: dict, *, runs: dict, baseline: dict, judge: dict,
                  pool_bias: str | None = None) -> dict:
    """The four checks and the verdict (module docstring), JSON-ready.

    ``dataset``: the evaluated split (``load_beir``); ``added_*``: the queries the run added,
    their qrels and clusters; ``runs``: ``{system: (run on the original queries, run on the
    added ones)}`` with ``"BM25"`` among them (the lexical bias); ``judge``: the entry of
    :func:`judge_check`; ``baseline``: :func:`.state.trivial_baseline`'s result.
    """
    if "BM25" not in runs:
        raise InputError("the panel needs a BM25 run", fix="add runs['BM25']")
    real_q = [q for q in dataset.qrels if q in dataset.queries]
    for name, (real, added) in runs.items():
        missing = [q for q in real_q if q not in real] + [q for q in added_queries
                                                          if q not in added]
        if missing:
            raise InputError(f"the run {name} has no ranking for {len(missing)} of the queries "
                             f"(e.g. {missing[:3]})",
                             fix="give a run over the original and the added queries")
    ranked = _ranked({**runs["BM25"][0], **runs["BM25"][1]})
    gate = {"added_queries": len(added_queries), "original_queries": len(real_q),
            "panel": list(runs), "judge": judge, "pool_bias": pool_bias}
    if added_queries:
        scores_r = {s: _per_query({q: dataset.qrels[q] for q in real_q}, r[0])
                    for s, r in runs.items()}
        scores_a = {s: _per_query(added_qrels, r[1]) for s, r in runs.items()}
        gate["system_order"] = system_order(scores_r, scores_a, real_clusters, added_clusters)
    else:
        gate["system_order"] = None
    gate["lexical_bias"] = {"added": lexical_bias(added_qrels, ranked) if added_queries else None,
                            "original": lexical_bias({q: dataset.qrels[q] for q in real_q},
                                                     ranked)}
    gate["trivial_baseline"] = baseline
    gate["thresholds"] = {"kappa_min": KAPPA_MIN, "tau_min": TAU_MIN,
                          "why": "κ < 0.2: at most slight agreement with human judgments "
                                 "(Landis & Koch); τ < 0: the added queries reverse the "
                                 "panel's order on the original ones"}
    gate.update(_verdict(gate))
    return gate


def _verdict(gate: dict) -> dict:
    """Fails at κ < KAPPA_MIN or τ < TAU_MIN; passes only when every check it could make was
    made (a measured judge with no κ, or a τ that cannot be computed, e.g. tied means, is
    inconclusive, never a pass)."""
    if not gate["added_queries"]:
        return {"passed": None, "verdict": "nothing added: nothing to gate"}
    fails, unknown = [], []
    j = gate["judge"]
    if j.get("measured"):
        k = j.get("kappa")
        if k is None:
            unknown.append("the judge's κ is undefined on its sample")
        elif k < KAPPA_MIN:
            fails.append(f"judge κ = {k:.2f} < {KAPPA_MIN} against the human qrels")
    so = gate.get("system_order")
    if so:
        tau = so.get("kendall_tau")
        if tau is None:
            unknown.append("Kendall τ is undefined (tied means)")
        elif tau < TAU_MIN:
            note = ""
            if len(so["systems"]) == 2:   # τ of two systems is one sign: say how sure it is
                p = so["pairs"][0]["added"]["p_value"]
                note = (f" (two systems: τ is the sign of one difference, p = {p:.2g} on the "
                        "added queries)" if p is not None else "")
            fails.append(f"Kendall τ = {tau:.2f} < {TAU_MIN:g}: the added queries reverse the "
                         f"panel's order on the original queries{note}")
    if fails:
        return {"passed": False, "verdict": "FAILS the validity gate: " + "; ".join(fails)
                + ". Do not read system comparisons from these queries."}
    if unknown:
        return {"passed": None, "verdict": "inconclusive: " + "; ".join(unknown)
                + ". Do not read system comparisons from these queries yet."}
    return {"passed": True, "verdict": "passes the validity gate (κ ≥ 0.2 where measured, "
                                       "τ ≥ 0); read the lexical bias and the baseline beside"}


def judge_sample(judge, dataset, bm25_real: dict, *, seed: int = 0, note: str | None = None,
                 calls=None, judge_batch: int = 8) -> dict:
    """The gate's judge entry (:func:`judge_check`) on a sample of real pairs: at most
    :data:`GATE_QUERIES` queries.  With ``calls`` (the LLM path's
    :class:`~.llm.BudgetedCalls`) it is paid from what the generation left of the budget (one
    request per query with a ``judge_batch`` of 4 or more): fewer than
    :data:`GATE_MIN_QUERIES` requests left, a budget spent on the way, or fewer than that many
    queries graded leaves the judge unmeasured, and says why."""
    n = GATE_QUERIES
    if calls is not None and judge is not None:
        per = -(-4 // max(1, judge_batch))   # requests per query: 4 pooled documents
        n = min(GATE_QUERIES, calls.remaining // per)
        if n < GATE_MIN_QUERIES:
            return judge_check(None, dataset, bm25_real, note=(
                f"{calls.remaining} LLM calls were left after the generation, fewer than the "
                f"gate's sample of {GATE_MIN_QUERIES}–{GATE_QUERIES} real queries needs: raise "
                f"--budget, or bound the generation with --max-candidates"))
    try:
        out = judge_check(judge, dataset, bm25_real, note=note, seed=seed, n_queries=n)
    except BudgetExhausted as exc:
        return judge_check(None, dataset, bm25_real, note=f"the budget ran out on the "
                           f"judge's sample ({exc}): raise --budget")
    if out.get("measured") and out["queries"] < GATE_MIN_QUERIES:
        why = out.get("stopped") or "no BM25 ranking for the others"
        return judge_check(None, dataset, bm25_real, note=(
            f"only {out['queries']} queries were graded ({why}), fewer than the gate's "
            f"{GATE_MIN_QUERIES}"))
    return out


def _evaluated_queries(dataset) -> dict:
    """``{qid: text}`` of the evaluated split's judged queries that have a text."""
    return {q: dataset.queries[q] for q in dataset.qrels if q in dataset.queries}


def panel_runs(dataset, added: dict, *, bm25_real: dict, bm25_run, panel: dict | None = None,
               cache_dir=None, show_progress: bool = False) -> tuple[dict, list]:
    """``(runs, left_out)``: the panel :func:`validity_gate` scores, ``{system: (run on the
    original queries, run on the ``added`` ones)}`` — BM25 (``bm25_real`` on the original
    queries, ``bm25_run`` on the added ones), the packaged MiniLM (:func:`dense_runs`; only
    when a query was added: nothing to compare otherwise, and no corpus to embed), and each
    run of ``panel`` ``{name: run}``; ``left_out``: the runs of ``panel`` that rank none of
    one set (made before the generation, say), each with why.  A query missing from a run
    that has its set is an empty ranking (nDCG 0, as trec_eval -c counts it)."""
    real = _evaluated_queries(dataset)
    runs = {"BM25": (bm25_real, bm25_run(dataset.corpus, added, depth=PANEL_DEPTH)[0]
                     if added else {})}
    if added:
        dense = dense_runs(dataset.corpus, {"real": real, "added": added}, None, cache_dir,
                           show_progress=show_progress)
        runs["MiniLM"] = (dense["real"], dense["added"])
    left_out = []
    for name, run in (panel or {}).items():
        for what, qs in (("original", real), ("added", added)):
            if qs and not any(q in run for q in qs):
                left_out.append(f"{name}: no ranking for any of the {len(qs)} {what} queries")
                break
        else:
            runs[name] = ({q: run.get(q, {}) for q in real}, {q: run.get(q, {}) for q in added})
    return runs, left_out


def run_gate(dataset, result, *, judge, bm25_run, panel: dict | None = None, seed: int = 0,
             note: str | None = None, calls=None, judge_batch: int = 8,
             dense_pool: bool = False, cache_dir=None, show_progress: bool = False) -> dict:
    """The validity gate of a run's ``result`` (:class:`~.result.GenerationResult`) on the
    evaluated split ``dataset``: the judge's sample (:func:`judge_sample`; ``judge`` None: not
    measured, with the ``note``), the panel (:func:`panel_runs`), :func:`validity_gate`, and
    ``panel_left_out`` when a run of ``panel`` was left out.  ``bm25_run(corpus, queries,
    depth=)`` -> ``(run, info)`` is the BM25 retriever
    (:func:`mteb_stratified.adapters.bm25.bm25_run`); ``dense_pool``: the generated qrels
    were pooled with the dense model too (the stated pool bias says so); ``cache_dir``: where
    the corpus embeddings are cached when the embedding cache is off."""
    bm25_real = bm25_run(dataset.corpus, _evaluated_queries(dataset), depth=PANEL_DEPTH)[0]
    judged = judge_sample(judge, dataset, bm25_real, seed=seed, note=note, calls=calls,
                          judge_batch=judge_batch)
    added = {r.query_id: r.query for r in result.accepted}
    runs, left_out = panel_runs(dataset, added, bm25_real=bm25_real, bm25_run=bm25_run,
                                panel=panel, cache_dir=cache_dir, show_progress=show_progress)
    gate = validity_gate(
        dataset, added, {r.query_id: r.qrels for r in result.accepted},
        {r.query_id: r.landed[0] for r in result.accepted}, result.original_clusters,
        runs=runs, baseline=result.baseline.to_dict(), judge=judged,
        pool_bias=None if result.pool else POOL_BIAS.format(
            dense=" + dense" if dense_pool else ""))
    if left_out:
        gate["panel_left_out"] = left_out
    return gate
