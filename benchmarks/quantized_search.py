"""Binary FAISS search against fp32 flat search, time and memory side by side in one run (#47).

Generates ``--docs`` (default 1,000,000) synthetic ``--dim``-d (384) float32 documents once, in
a temp folder: ``--clusters`` unit centres ``c`` and documents ``x = normalise(c + e)`` with
``e ~ N(0, (noise² / dim) I)`` (so ``|e| ≈ noise`` and two members of a cluster have cosine
``≈ 1 / (1 + noise²)``: neighbourhoods exist).  Each of the ``--queries`` queries is a noisy
copy of a random source document, ``q = normalise(x_s + e_q)``, ``|e_q| ≈ query-noise``; its
qrels are the source (grade 2) and the ``--related`` members of the source's cluster nearest
to the source (grade 1).  The generation is not counted in any job.

Each job runs in its own subprocess; its memory is its peak resident set (``VmHWM``, the
high-water mark of this process image: unlike ``ru_maxrss`` it does not carry over the
parent's image through ``exec``) minus the peak of a baseline process with the same imports.
Documents are read in chunks of ``--chunk`` rows with plain reads (not memory-mapped: a mapped
page a job touched would count in its resident set) and added chunk by chunk, so a peak is the
index and the growth of its buffer, not a copy of the corpus:

* ``baseline``: the imports (numpy, faiss, ``sentence_transformers.util.quantization``,
  mteb_stratified), nothing loaded;
* ``fp32-flat``: ``faiss.IndexFlatIP(dim)`` over the fp32 documents, top ``--k`` (100);
  index bytes ``ntotal · d · 4``;
* ``binary-flat``: ``quantize_embeddings(x, precision="ubinary")`` (one bit ``x_i > 0`` per
  dimension, packed) for documents and queries, ``faiss.IndexBinaryFlat(dim)``, top k by
  Hamming distance ``h``; the run's score is the Hamming similarity ``dim − h`` (the number of
  agreeing bits, an integer in ``[0, dim]``: many ties); index bytes ``ntotal · dim / 8``;
* ``binary-rescore``: the binary first stage for ``k · m`` (``--rescore-multiplier`` m = 2,
  the default of sentence-transformers' ``semantic_search_faiss``), then each candidate
  rescored with the fp32 query against its ±1 bits, ``s = q · (2b − 1)`` (an affine map of
  ``q · b``, the 0/1 score of ``semantic_search_faiss``: same order and ties), all ``k · m``
  kept; the bits are read from the index's own packed codes, so the memory is the codes;
* ``evaluate-run``: the tie-aware evaluation of the binary-flat run: the run
  ``{query: {doc: dim − h}}`` and qrels as dicts, then ``mteb_stratified.evaluate(qrels, run,
  ["nDCG@10", "RR@10", "R@100"])``; reads the run that binary-flat saved.

Each search (and the evaluation) runs ``--repeats`` times (3) and the fastest is reported, with
its CPU seconds per wall second: the cores it got, which is below faiss' OpenMP threads when
other processes share the machine.  Each job prints one JSON line.  The parent then reports
ratios (binary / fp32, rescore / fp32, evaluation peak / binary index), and from the saved
runs: the share of queries with a tie at the top-10 boundary (score at rank 10 = score at
rank 11), distinct scores among the top 10, the recall of the fp32 top k by each run's
candidates (``|A ∩ F| / k``), and the tie-aware ``E[nDCG@10]`` next to the tie-oblivious
(trec_eval order) value of every run.

Usage: ``python benchmarks/quantized_search.py [--docs 1000000] [--queries 1000]
[--jobs fp32-flat,binary-flat] [--out benchmarks/results/quantized_search.txt]``; smoke check:
``--docs 20000 --queries 50``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

from _harness import command_line, interleaved, load_1m, vm_hwm_bytes, vm_rss_bytes

JOBS = ("baseline", "fp32-flat", "binary-flat", "binary-rescore", "evaluate-run")
MEASURES = ["nDCG@10", "RR@10", "R@100"]
MIB = 2.0**20
#: The runs each job saves (``<name>_ids.npy``, ``<name>_scores.npy``) and their job.
RUNS = {"fp32": "fp32-flat", "binary": "binary-flat", "first": "binary-rescore",
        "rescore": "binary-rescore"}


def _write_docs(path: str, centres: np.ndarray, labels: np.ndarray, noise: float,
                rng: np.random.Generator, chunk: int) -> None:
    """``normalise(c_label + e)`` written chunk by chunk as a float32 ``.npy`` (the parent never
    holds the corpus)."""
    n, dim = labels.size, centres.shape[1]
    with open(path, "wb") as fh:
        np.lib.format.write_array_header_1_0(
            fh, {"descr": "<f4", "fortran_order": False, "shape": (n, dim)})
        for start in range(0, n, chunk):
            lab = labels[start:start + chunk]
            x = centres[lab] + rng.standard_normal((lab.size, dim), dtype=np.float32) * (
                np.float32(noise / np.sqrt(dim)))
            x /= np.linalg.norm(x, axis=1, keepdims=True)
            x.astype("<f4").tofile(fh)


def generate(folder: str, args: argparse.Namespace) -> None:
    """Documents, queries and qrels (see the module docstring) as ``.npy`` in ``folder``.

    ``qrels.npy`` is ``(Q, 1 + related)`` document ids: the source (grade 2), then the
    ``related`` members of its cluster with the largest ``x_s · x_j`` (grade 1).
    """
    rng = np.random.default_rng(args.seed)
    dim = args.dim
    centres = rng.standard_normal((args.clusters, dim), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    labels = rng.integers(0, args.clusters, size=args.docs)
    path = os.path.join(folder, "docs.npy")
    _write_docs(path, centres, labels, args.noise, rng, args.chunk)
    docs = np.load(path, mmap_mode="r")
    sources = rng.choice(args.docs, size=args.queries, replace=False)
    src = np.asarray(docs[np.sort(sources)])[np.argsort(np.argsort(sources))]
    queries = src + rng.standard_normal(src.shape, dtype=np.float32) * np.float32(
        args.query_noise / np.sqrt(dim))
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(args.clusters + 1))
    qrels = np.full((args.queries, 1 + args.related), -1, dtype=np.int64)
    for q, s in enumerate(sources.tolist()):
        c = labels[s]
        members = order[bounds[c]:bounds[c + 1]]
        members = np.sort(members[members != s])
        sim = np.asarray(docs[members]) @ src[q]
        near = members[np.argsort(-sim, kind="stable")[:args.related]]
        qrels[q, 0], qrels[q, 1:1 + near.size] = s, near
    np.save(os.path.join(folder, "queries.npy"), queries.astype(np.float32))
    np.save(os.path.join(folder, "qrels.npy"), qrels)


def _doc_chunks(path: str, chunk: int):
    """The ``.npy`` matrix at ``path`` in blocks of ``chunk`` rows, by plain reads."""
    head = np.load(path, mmap_mode="r")  # the header only: no page of data is touched
    (n, dim), offset = head.shape, head.offset
    del head
    for start in range(0, n, chunk):
        count = min(chunk, n - start)
        yield np.fromfile(path, dtype="<f4", count=count * dim,
                          offset=offset + start * dim * 4).reshape(count, dim)


def _best(repeats: int, fn, *a):
    """``fn(*a)`` timed ``repeats`` times (:func:`_harness.interleaved`): the last output, the
    fastest wall time and its CPU seconds / wall seconds (≈ the threads kept busy; the fastest
    run is the least disturbed by other processes on the machine)."""
    got = interleaved({"job": lambda: fn(*a)}, max(1, repeats))
    wall, cpu = got.wall["job"], got.cpu["job"]
    i = min(range(len(wall)), key=wall.__getitem__)
    return got.results["job"], wall[i], cpu[i] / wall[i] if wall[i] > 0 else float("nan")


def _save_run(folder: str, name: str, ids: np.ndarray, scores: np.ndarray) -> None:
    np.save(os.path.join(folder, f"{name}_ids.npy"), ids)
    np.save(os.path.join(folder, f"{name}_scores.npy"), scores)


def _job_fp32(folder: str, k: int, chunk: int, repeats: int) -> dict:
    import faiss

    queries = np.load(os.path.join(folder, "queries.npy"))
    index = faiss.IndexFlatIP(queries.shape[1])
    t0 = time.perf_counter()
    for block in _doc_chunks(os.path.join(folder, "docs.npy"), chunk):
        index.add(block)
    build = time.perf_counter() - t0
    rss = vm_rss_bytes()
    (scores, ids), search, cpu = _best(repeats, index.search, queries, k)
    _save_run(folder, "fp32", ids, scores)
    return {"index_bytes": index.ntotal * index.d * 4, "build_s": build, "rss_built": rss,
            "search_s": search, "search_cpu": cpu, "queries": len(queries)}


def _binary_index(folder: str, chunk: int):
    """``(index, queries, query codes, build s, quantize s)``: the packed codes of every
    document in an ``IndexBinaryFlat``, quantized chunk by chunk."""
    import faiss
    from sentence_transformers.util.quantization import quantize_embeddings

    queries = np.load(os.path.join(folder, "queries.npy"))
    index = faiss.IndexBinaryFlat(queries.shape[1])
    quantize = 0.0
    t0 = time.perf_counter()
    for block in _doc_chunks(os.path.join(folder, "docs.npy"), chunk):
        t1 = time.perf_counter()
        codes = quantize_embeddings(block, precision="ubinary")
        quantize += time.perf_counter() - t1
        index.add(codes)
    build = time.perf_counter() - t0
    return index, queries, quantize_embeddings(queries, precision="ubinary"), build, quantize


def _job_binary(folder: str, k: int, chunk: int, repeats: int) -> dict:
    index, queries, qcodes, build, quantize = _binary_index(folder, chunk)
    rss = vm_rss_bytes()
    (dist, ids), search, cpu = _best(repeats, index.search, qcodes, k)
    _save_run(folder, "binary", ids, (index.d - dist).astype(np.int32))
    return {"index_bytes": index.ntotal * index.code_size, "build_s": build,
            "quantize_s": quantize, "rss_built": rss, "search_s": search, "search_cpu": cpu,
            "queries": len(queries)}


def _rescore(codes: np.ndarray, queries: np.ndarray, ids: np.ndarray,
             block: int = 64) -> tuple[np.ndarray, np.ndarray]:
    """Candidates re-ranked by ``s = q · (2b − 1)`` (fp32 query, ±1 unpacked bits), all kept,
    sorted by ``s`` descending (stable: the first stage's order among equal ``s``)."""
    dim = queries.shape[1]
    out_ids, out_s = np.empty_like(ids), np.empty(ids.shape, dtype=np.float32)
    for start in range(0, len(queries), block):
        sl = slice(start, start + block)
        bits = np.unpackbits(codes[ids[sl]], axis=-1)[..., :dim]  # (b, km, dim) of 0/1
        signs = bits.astype(np.float32) * 2 - 1
        s = np.matmul(signs, queries[sl, :, None])[..., 0]
        order = np.argsort(-s, axis=1, kind="stable")
        out_ids[sl] = np.take_along_axis(ids[sl], order, axis=1)
        out_s[sl] = np.take_along_axis(s, order, axis=1)
    return out_ids, out_s


def _job_rescore(folder: str, k: int, m: int, chunk: int, repeats: int) -> dict:
    import faiss

    index, queries, qcodes, build, quantize = _binary_index(folder, chunk)
    rss = vm_rss_bytes()
    (dist, ids), search, cpu = _best(repeats, index.search, qcodes, k * m)
    # a view of the index's own packed codes (no copy): rescoring needs nothing else
    codes = faiss.rev_swig_ptr(index.xb.data(), index.ntotal * index.code_size)
    codes = codes.reshape(index.ntotal, index.code_size)
    (r_ids, r_s), rescore, rcpu = _best(repeats, _rescore, codes, queries, ids)
    _save_run(folder, "first", ids, (index.d - dist).astype(np.int32))
    _save_run(folder, "rescore", r_ids, r_s)
    return {"index_bytes": index.ntotal * index.code_size, "build_s": build,
            "quantize_s": quantize, "rss_built": rss, "search_s": search + rescore,
            "first_s": search, "rescore_s": rescore, "search_cpu": cpu, "rescore_cpu": rcpu,
            "queries": len(queries)}


def _run_dicts(ids: np.ndarray, scores: np.ndarray, qrels: np.ndarray) -> tuple[dict, dict]:
    """``({qid: {docid: grade}}, {qid: {docid: score}})``: grade 2 for the source, 1 for the
    related documents; ids ``-1`` (FAISS padding, or no related document) left out."""
    qd = {f"q{q}": {f"d{d}": (2 if j == 0 else 1) for j, d in enumerate(row) if d >= 0}
          for q, row in enumerate(qrels.tolist())}
    run = {f"q{q}": {f"d{d}": float(s) for d, s in zip(row, srow) if d >= 0}
           for q, (row, srow) in enumerate(zip(ids.tolist(), scores.tolist()))}
    return qd, run


def _job_evaluate(folder: str, repeats: int) -> dict:
    import mteb_stratified

    ids = np.load(os.path.join(folder, "binary_ids.npy"))
    scores = np.load(os.path.join(folder, "binary_scores.npy"))
    qrels = np.load(os.path.join(folder, "qrels.npy"))
    t0 = time.perf_counter()
    qd, run = _run_dicts(ids, scores, qrels)
    dicts = time.perf_counter() - t0
    res, evaluate, _ = _best(repeats, mteb_stratified.evaluate, qd, run, MEASURES)
    return {"dicts_s": dicts, "evaluate_s": evaluate, "search_s": dicts + evaluate,
            "nDCG@10": res["nDCG@10"].expected, "run_bytes": int(ids.nbytes + scores.nbytes)}


def job(name: str, folder: str, k: int, m: int, chunk: int, repeats: int = 1) -> dict:
    """Run one job in this process (the same imports for every job); return its figures."""
    import faiss  # noqa: F401
    import sentence_transformers.util.quantization  # noqa: F401

    import mteb_stratified  # noqa: F401

    out: dict = {}
    if name == "fp32-flat":
        out = _job_fp32(folder, k, chunk, repeats)
    elif name == "binary-flat":
        out = _job_binary(folder, k, chunk, repeats)
    elif name == "binary-rescore":
        out = _job_rescore(folder, k, m, chunk, repeats)
    elif name == "evaluate-run":
        out = _job_evaluate(folder, repeats)
    out["peak"] = vm_hwm_bytes()
    out["rss"] = vm_rss_bytes()
    return out


def _tie_stats(scores: np.ndarray, k: int) -> dict:
    """Share of queries with score[rank 10] = score[rank 11], the mean number of distinct
    scores in the top 10, and the share with score[rank k] = score[rank k + 1] (a tie group
    cut by a top-k list) where the run is longer than k."""
    top = scores[:, :10]
    out = {"tie10": float(np.mean(scores[:, 9] == scores[:, 10])) if scores.shape[1] > 10
           else float("nan"),
           "distinct10": float(np.mean(1 + np.sum(top[:, 1:] != top[:, :-1], axis=1)))}
    out["tie_k"] = (float(np.mean(scores[:, k - 1] == scores[:, k])) if scores.shape[1] > k
                    else float("nan"))
    return out


def _recall(ids: np.ndarray, ref: np.ndarray) -> float:
    """Mean over queries of ``|ids ∩ ref| / |ref|``: the share of the reference top k found."""
    return float(np.mean([np.intersect1d(a, r).size / r.size for a, r in zip(ids, ref)]))


def analyse(folder: str, k: int) -> dict:
    """Tie, recall and evaluation figures of every saved run, keyed by run name."""
    import mteb_stratified

    qrels = np.load(os.path.join(folder, "qrels.npy"))
    runs = {}
    for name in RUNS:
        path = os.path.join(folder, f"{name}_ids.npy")
        if os.path.exists(path):
            runs[name] = (np.load(path), np.load(os.path.join(folder, f"{name}_scores.npy")))
    out: dict = {}
    for name, (ids, scores) in runs.items():
        row = _tie_stats(scores, k)
        if "fp32" in runs:
            row["recall_fp32"] = _recall(ids, runs["fp32"][0][:, :k])
            row["recall_fp32_k"] = _recall(ids[:, :k], runs["fp32"][0][:, :k])
        res = mteb_stratified.evaluate(*_run_dicts(ids, scores, qrels), MEASURES)
        nd = res["nDCG@10"]
        row.update(ndcg=nd.expected, ndcg_obl=nd.oblivious, ndcg_range=nd.max - nd.min,
                   rr=res["RR@10"].expected, r100=res["R@100"].expected,
                   truncated=res.truncated_tie_queries / len(ids))
        out[name] = row
    return out


def _machine() -> str:
    import faiss

    model = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as fh:
            model = next((ln.split(":", 1)[1].strip() for ln in fh
                          if ln.startswith("model name")), model)
    except OSError:
        pass
    load = load_1m()
    return (f"{model}; os.cpu_count() {os.cpu_count()}; faiss {faiss.__version__}, "
            f"omp_get_max_threads() {faiss.omp_get_max_threads()}; numpy {np.__version__}; "
            f"python {platform.python_version()}; load average at start {load:.2f}")


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b else "n/a"


def _num(x, width: int, digits: int, unit: float = 1.0) -> str:
    """``x / unit`` right-aligned, ``-`` where there is no figure (None or NaN)."""
    if x is None or x != x:
        return f"{'-':>{width}}"
    return f"{x / unit:{width}.{digits}f}"


def _job_table(res: dict, jobs: list[str], k: int, m: int) -> list[str]:
    """One row per job: index MiB, peak and resident-after-build above the baseline, times."""
    base = res["baseline"]
    lines = [f"baseline: peak {base['peak'] / MIB:.0f} MiB, resident {base['rss'] / MIB:.0f} MiB"
             " (the same imports; subtracted below)", "",
             f"{'job':<16}{'index MiB':>10}{'peak MiB':>10}{'built MiB':>10}{'build s':>9}"
             f"{'search s':>10}{'ms/query':>10}{'cpu/wall':>9}"]
    for name in jobs:
        r = res[name]
        built = r["rss_built"] - base["rss"] if "rss_built" in r else None
        per_q = 1000 * r["search_s"] / r.get("queries", res_queries(res))
        lines.append(f"{name:<16}{_num(r.get('index_bytes'), 10, 1, MIB)}"
                     f"{_num(r['peak'] - base['peak'], 10, 1, MIB)}{_num(built, 10, 1, MIB)}"
                     f"{_num(r.get('build_s'), 9, 2)}{_num(r['search_s'], 10, 2)}"
                     f"{_num(per_q, 10, 3)}{_num(r.get('search_cpu'), 9, 2)}")
    notes = []
    if "binary-flat" in res:
        notes.append(f"binary-flat: quantize {res['binary-flat']['quantize_s']:.2f} s of the build")
    if "binary-rescore" in res:
        r = res["binary-rescore"]
        notes.append(f"binary-rescore: first stage top {k * m} {r['first_s']:.2f} s "
                     f"(cpu/wall {r['search_cpu']:.2f}) + rescore {r['rescore_s']:.2f} s "
                     f"(cpu/wall {r['rescore_cpu']:.2f})")
    if "evaluate-run" in res:
        r = res["evaluate-run"]
        notes.append(f"evaluate-run: dicts {r['dicts_s']:.2f} s + evaluate {r['evaluate_s']:.2f} s"
                     f"; run arrays {r['run_bytes'] / MIB:.2f} MiB; E[nDCG@10] "
                     f"{r['nDCG@10']:.4f}")
    lines += [""] + notes + [
        "", "peak: VmHWM minus the baseline's; built: VmRSS after the index is built (before the",
        "search) minus the baseline's VmRSS; search s: the fastest of --repeats searches (for",
        "evaluate-run: dicts + evaluate); cpu/wall: CPU s per wall s of that search, the cores it",
        "got (below faiss' OpenMP threads when other processes share the machine)"]
    return lines


def res_queries(res: dict) -> int:
    """The number of queries, from any job that searched."""
    return next((r["queries"] for r in res.values() if "queries" in r), 1)


def _ratio_table(res: dict) -> list[str]:
    """Ratios measured side by side: binary / fp32, rescore / fp32, evaluation / binary index."""
    base = res["baseline"]

    def peak(name: str) -> float:
        return res[name]["peak"] - base["peak"]

    lines = ["", f"{'ratio':<34}{'search time':>12}{'index bytes':>12}{'peak memory':>12}"]
    for name, label in (("binary-flat", "binary-flat / fp32-flat"),
                        ("binary-rescore", "binary-rescore / fp32-flat")):
        if name in res and "fp32-flat" in res:
            a, f = res[name], res["fp32-flat"]
            lines.append(f"{label:<34}{_ratio(a['search_s'], f['search_s']):>12}"
                         f"{_ratio(a['index_bytes'], f['index_bytes']):>12}"
                         f"{_ratio(peak(name), peak('fp32-flat')):>12}")
    if len(lines) == 2:
        lines = []
    if "evaluate-run" in res and "binary-flat" in res:
        b, e = res["binary-flat"], res["evaluate-run"]
        lines += ["", f"evaluate-run (dicts + tie-aware evaluate of the binary top k): peak "
                  f"{peak('evaluate-run') / MIB:.1f} MiB = "
                  f"{_ratio(peak('evaluate-run'), b['index_bytes'])} x the binary index "
                  f"({b['index_bytes'] / MIB:.1f} MiB),",
                  f"  {_ratio(peak('evaluate-run'), peak('binary-flat'))} x the binary-flat "
                  f"job's peak; time {_ratio(e['search_s'], b['search_s'])} x the binary search"]
    return lines


def _run_table(stats: dict, k: int, m: int) -> list[str]:
    """Ties, recall of the fp32 top k, and tie-aware vs oblivious evaluation of each run."""
    label = {"fp32": f"fp32 top {k}", "binary": f"binary top {k}",
             "first": f"binary top {k * m} (stage 1)", "rescore": f"rescored {k * m}"}
    lines = ["", f"{'run':<26}{'tie@10':>7}{'dist10':>7}{'tie@k':>7}{'rec.all':>8}"
             f"{'rec@k':>7}{'E[nDCG]':>8}{'obl.':>8}{'range':>7}{'E[RR]':>7}{'E[R@k]':>7}"
             f"{'trunc':>7}"]
    for name, r in stats.items():
        lines.append(f"{label[name]:<26}{_num(r['tie10'], 7, 3)}{_num(r['distinct10'], 7, 2)}"
                     f"{_num(r['tie_k'], 7, 3)}{_num(r.get('recall_fp32'), 8, 3)}"
                     f"{_num(r.get('recall_fp32_k'), 7, 3)}{_num(r['ndcg'], 8, 4)}"
                     f"{_num(r['ndcg_obl'], 8, 4)}{_num(r['ndcg_range'], 7, 4)}"
                     f"{_num(r['rr'], 7, 4)}{_num(r['r100'], 7, 4)}{_num(r['truncated'], 7, 3)}")
    lines += ["tie@10: share of queries with score[10] = score[11]; dist10: mean distinct scores "
              "in the top 10;",
              f"tie@k: share with score[{k}] = score[{k + 1}] (a tie group cut by a top-{k} "
              "list; - for a list of k);",
              f"rec.all / rec@k: share of the fp32 top {k} among the run's candidates / its top "
              f"{k}; E[nDCG], obl.,",
              "range: tie-aware expected nDCG@10, the trec_eval-order (oblivious) value, "
              "mean max − min;",
              "E[RR]: RR@10; E[R@k]: R@100; trunc: share of queries the evaluation flags with a "
              "truncated tie"]
    return lines


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--docs", type=int, default=1_000_000)
    p.add_argument("--dim", type=int, default=384, help="a multiple of 8")
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--clusters", type=int, default=1000)
    p.add_argument("--noise", type=float, default=1.0, help="|e| of a document")
    p.add_argument("--query-noise", type=float, default=1.5, help="|e_q| of a query")
    p.add_argument("--related", type=int, default=5, help="grade-1 documents per query")
    p.add_argument("--k", type=int, default=100)
    p.add_argument("--rescore-multiplier", type=int, default=2)
    p.add_argument("--chunk", type=int, default=16384, help="rows read and added at a time")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=3,
                   help="searches (and evaluations) per job; the fastest is reported")
    p.add_argument("--jobs", default=",".join(JOBS[1:]),
                   help="the jobs to run, comma-separated (default: all)")
    p.add_argument("--out", help="also write the report here")
    p.add_argument("--job", choices=JOBS, help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.dim % 8:
        p.error("--dim must be a multiple of 8 (IndexBinaryFlat)")
    if args.k <= 10 or args.docs < args.k * args.rescore_multiplier + 1:
        p.error("need --k > 10 and --docs > k · rescore-multiplier")
    if args.queries > args.docs:
        p.error("--queries must be at most --docs (one source document each)")
    jobs = [j for j in args.jobs.split(",") if j]
    unknown = [j for j in jobs if j not in JOBS[1:]]
    if unknown:
        p.error(f"unknown jobs {unknown}; choose from {', '.join(JOBS[1:])}")
    if "evaluate-run" in jobs and "binary-flat" not in jobs:
        p.error("evaluate-run reads the run that binary-flat saves: add binary-flat")
    args.job_list = [j for j in JOBS[1:] if j in jobs]
    return args


def main() -> None:
    args = _parse()
    if args.job:
        print(json.dumps(job(args.job, args.data, args.k, args.rescore_multiplier, args.chunk,
                             args.repeats)))
        return
    command = command_line()
    machine = _machine()
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="quantized_search_") as folder:
        t0 = time.perf_counter()
        generate(folder, args)
        gen = time.perf_counter() - t0
        res = {}
        for name in ["baseline"] + args.job_list:
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--job", name,
                                   "--data", folder, "--k", str(args.k), "--rescore-multiplier",
                                   str(args.rescore_multiplier), "--chunk", str(args.chunk),
                                   "--repeats", str(args.repeats)],
                                  capture_output=True, text=True)
            if proc.returncode:
                sys.exit(f"job {name} failed:\n{proc.stderr[-3000:]}")
            res[name] = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"  {name}: done", file=sys.stderr, flush=True)
        stats = analyse(folder, args.k)
    m = args.rescore_multiplier
    lines = ["Binary FAISS search vs fp32 flat search (#47), one run",
             f"command: {command}", f"machine: {machine}",
             f"data: {args.docs:,} docs x {args.dim} d float32 ({args.clusters} clusters, doc "
             f"noise {args.noise}), {args.queries} queries (noise {args.query_noise}), seed "
             f"{args.seed}; qrels: source grade 2 + {args.related} nearest cluster members grade "
             f"1; k {args.k}, rescore multiplier {m}; generated in {gen:.1f} s (not counted)", ""]
    lines += _job_table(res, args.job_list, args.k, m) + _ratio_table(res)
    lines += _run_table(stats, args.k, m)
    load = load_1m()
    lines.append(f"\ntotal wall time {time.perf_counter() - t_all:.0f} s; load average at the "
                 f"end {load:.2f}")
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        folder = os.path.dirname(os.path.abspath(args.out))
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".quantized_search_", suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)  # mkstemp makes it 0600
        os.replace(tmp, args.out)


if __name__ == "__main__":
    main()
