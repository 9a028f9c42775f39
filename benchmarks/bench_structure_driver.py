"""Peak memory of the structure pipeline's driver on a synthetic corpus of N documents.

What is measured: :func:`mteb_stratified.structure.pipeline.build_structure` with ``out`` (so
with its extraction checkpoint under ``OUT/.work``), run in a fresh subprocess per size; its
peak RSS (``ru_maxrss``), the RSS before the build (imports, the synthetic tables and the
corpus dict: what any caller holds) and the time of each step.  The slope is MiB per 1,000
documents between the two largest sizes, and the projection to 8.8M passages (MS MARCO) is
that slope times 8.8M plus the peak at the largest size measured.

What is synthetic (and only this):

* **the corpus**: document ``S0000001`` … is 2–5 consecutive sentences of one NFCorpus abstract
  (an abstract and a window drawn with a seeded rng), plus with probability 1/2 one sentence of
  another abstract; no title.  Sentences: NFCorpus' texts cut at ``[.!?]`` followed by a space
  and a capital (at least 4 words).  So the entity vocabulary is NFCorpus' own and saturates
  (it is bounded by NFCorpus' names), while the rows, texts and document embeddings grow with N;
* **the extraction**: each distinct sentence is extracted once, for real (spaCy noun chunks,
  the pipeline's ``offline`` extractor, :func:`~mteb_stratified.structure.extraction.
  extract_rows` on the sentence), and a document's row is composed from its sentences' rows
  (names in order, first description kept, ``n_raw`` summed, the first definition of an
  abbreviation kept), then passed through JSON so that its strings are its own, as a row
  deserialised from a worker or the checkpoint has them.  The engine (:mod:`mteb_stratified.structure.engine`) yields these rows,
  so the driver checkpoints and reads them as it would a Ray engine's;
* **the embeddings**: with ``--entity-embedding static`` (the pipeline's default) the entity
  names and ``name: description`` texts are embedded for real by the distilled static
  embedding (:mod:`mteb_stratified.structure.static_embed`: a tokenisation and a row sum; its
  table is distilled once, before the measured process, and loaded from the user cache).
  With ``--entity-embedding model`` (the runs before the static default) the engine looks
  them up: a bare name's embedding is real (MiniLM, computed once per distinct name); a
  sentence's is the normalised mean of its names' (:func:`sentence_embeddings`); a
  ``name: description`` text gets normalise(e(name) + e(its sentence)).  A document (the
  documents map; ``document_embedding="model"``) gets the normalised mean of its sentences'.
  The engine returns these instead of running the model, so no transformer runs in the
  measured process (its time is not measured);
* nothing else: the Leiden settings are the pipeline's (``--consensus-runs``: default
  :class:`~mteb_stratified.structure.pipeline.StructureConfig`'s).

Each step is timed in wall and CPU seconds (``time.process_time``: every thread of the
process), and a sampler (every 0.2 s) splits the steps by the function running in them (the
k-NN search, Leiden and the document tree inside ``leiden``; terms, central documents and NPMI
inside ``weights`` and ``quality``).  The machine may be shared: each run records the load
average and ``/proc/pressure/cpu`` (share of time some task waited for a CPU) before and
after, so a wall time can be read against its CPU time.  The time slope (seconds per 1,000
documents, wall and CPU) between the two largest sizes projects the build to 8.8M the same way
as the memory.

Run: ``python benchmarks/bench_structure_driver.py --sizes 10000 100000 300000 1000000``
(``--prepare-only`` builds the sentence cache; it lives in ``--cache``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

from _harness import machine_load, print_command, ru_maxrss_bytes, vm_rss_bytes

NFCORPUS = "/work/shared/data/nfcorpus"
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z])")


def _rss_now_mib() -> float:
    return vm_rss_bytes() / 2**20


def _peak_mib() -> float:
    return ru_maxrss_bytes() / 2**20


# -- preparation: sentences, their rows and embeddings, once ----------------------------------

def prepare(cache: str, corpus_dir: str) -> None:
    """The sentence pool (``sentences.json``: abstracts as lists of sentence ids and the
    sentence texts), each sentence's extraction row (``rows.jsonl``), the sentences' and the
    distinct names' embeddings (``sentence_emb.npy``, ``name_emb.npy``, ``names.json``)."""
    from mteb_stratified.io import load_corpus
    from mteb_stratified.structure.embed import embed_texts
    from mteb_stratified.structure.extraction import extract_rows
    from mteb_stratified.structure.extractors import SpacyNounChunkExtractor
    from mteb_stratified.structure.pipeline import StructureConfig

    os.makedirs(cache, exist_ok=True)
    t0 = time.perf_counter()
    corpus = load_corpus(corpus_dir)
    index: dict = {}
    abstracts = []
    for doc_id in sorted(corpus):
        sents = [s.strip() for s in _SENT.split(corpus[doc_id]["text"]) if
                 len(s.split()) >= 4]
        ids = []
        for s in sents:
            ids.append(index.setdefault(s, len(index)))
        if len(ids) >= 2:
            abstracts.append(ids)
    sentences = list(index)
    with open(os.path.join(cache, "sentences.json"), "w") as fh:
        json.dump({"abstracts": abstracts, "sentences": sentences}, fh)
    print(f"{len(sentences)} sentences of {len(abstracts)} abstracts", flush=True)
    cfg = StructureConfig()
    ex = SpacyNounChunkExtractor()
    texts = {str(i): s for i, s in enumerate(sentences)}
    with open(os.path.join(cache, "rows.jsonl"), "w") as fh:
        for start in range(0, len(sentences), 2000):
            ids = [str(i) for i in range(start, min(start + 2000, len(sentences)))]
            for row in extract_rows(ex, ids, texts, cfg):
                fh.write(json.dumps(row, sort_keys=True) + "\n")
            print(f"  extracted {start + len(ids)} sentences, {time.perf_counter() - t0:.0f} s",
                  flush=True)
    names: dict = {}
    with open(os.path.join(cache, "rows.jsonl")) as fh:
        for line in fh:
            for n, _ in json.loads(line)["entities"]:
                names.setdefault(n, len(names))
    with open(os.path.join(cache, "names.json"), "w") as fh:
        json.dump(list(names), fh)
    print(f"{len(names)} distinct names; embedding them", flush=True)
    if not os.path.exists(os.path.join(cache, "name_emb.npy")):
        np.save(os.path.join(cache, "name_emb.npy"), embed_texts(list(names), batch_size=256))
    print(f"  names embedded, {time.perf_counter() - t0:.0f} s", flush=True)
    np.save(os.path.join(cache, "sentence_emb.npy"), sentence_embeddings(cache, names))
    with open(os.path.join(cache, "DONE"), "w") as fh:
        fh.write(f"{time.perf_counter() - t0:.0f} s\n")
    print(f"prepared in {time.perf_counter() - t0:.0f} s", flush=True)


def sentence_embeddings(cache: str, names: dict) -> np.ndarray:
    """A sentence's stand-in embedding: the normalised mean of its names' real embeddings (a
    sentence without names: a seeded random unit vector).  Synthetic: MiniLM on the 33,881
    sentences would take longer than this machine's time allows."""
    name_emb = np.load(os.path.join(cache, "name_emb.npy"))
    rng = np.random.default_rng(1)
    out = []
    with open(os.path.join(cache, "rows.jsonl")) as fh:
        for line in fh:
            idx = [names[n] for n, _ in json.loads(line)["entities"]]
            v = name_emb[idx].sum(axis=0) if idx else rng.standard_normal(name_emb.shape[1])
            out.append(v / np.linalg.norm(v))
    return np.asarray(out, dtype=np.float32)


# -- the synthetic corpus and engine -----------------------------------------------------------

def synthetic_docs(n: int, abstracts: list, seed: int = 0) -> list:
    """Each document's sentence ids (module docstring)."""
    rng = np.random.default_rng(seed)
    docs = []
    a_of = rng.integers(0, len(abstracts), size=n)
    width = rng.integers(2, 6, size=n)
    start_u = rng.random(n)
    extra = rng.random(n) < 0.5
    other = rng.integers(0, len(abstracts), size=n)
    other_u = rng.random(n)
    for i in range(n):
        ab = abstracts[a_of[i]]
        w = min(int(width[i]), len(ab))
        s = int(start_u[i] * (len(ab) - w + 1))
        ids = ab[s:s + w]
        if extra[i]:
            ob = abstracts[other[i]]
            ids = ids + [ob[int(other_u[i] * len(ob))]]
        docs.append(ids)
    return docs


class SyntheticEngine:
    """An engine (:mod:`mteb_stratified.structure.engine`) that composes each document's row
    from its sentences' rows and looks embeddings up (module docstring)."""

    name = "synthetic"
    progress_bars = True  # no bar

    def __init__(self, cache: str, doc_sentences: list, doc_ids: list, texts: list) -> None:
        with open(os.path.join(cache, "rows.jsonl")) as fh:
            self.rows = [json.loads(line) for line in fh]
        with open(os.path.join(cache, "names.json")) as fh:
            self.name_index = {n: i for i, n in enumerate(json.load(fh))}
        self.name_emb = np.load(os.path.join(cache, "name_emb.npy"))
        self.sent_emb = np.load(os.path.join(cache, "sentence_emb.npy"))
        self.desc_sentence: dict = {}
        for i, row in enumerate(self.rows):
            for _, desc in row["entities"]:
                self.desc_sentence.setdefault(desc, i)
        self.doc_pos = {d: i for i, d in enumerate(doc_ids)}
        self.doc_sentences = doc_sentences
        self.first_text, self.last_text = texts[0], texts[-1]
        self.n_docs = len(doc_ids)

    def extract(self, chunks, texts, extractor, cfg):
        for chunk in chunks:
            out = []
            for d in chunk:
                entities: dict = {}
                abbreviations: dict = {}
                n_raw = 0
                for s in self.doc_sentences[self.doc_pos[d]]:
                    row = self.rows[s]
                    for name, desc in row["entities"]:
                        entities.setdefault(name, desc)
                    for short, long in row["abbreviations"].items():
                        abbreviations.setdefault(short, long)
                    n_raw += row["n_raw"]
                row = {"doc_id": d, "entities": [[n, e] for n, e in entities.items()],
                       "n_raw": n_raw, "abbreviations": abbreviations}
                # through JSON, as a row from a worker or a checkpoint arrives: strings of its
                # own, not shared with the sentence rows (the driver held such rows before #32)
                out.append(json.loads(json.dumps(row)))
            yield out

    def embed(self, inputs, model, batch_size, **kwargs):
        if (len(inputs) == self.n_docs and inputs[0] == self.first_text
                and inputs[-1] == self.last_text):  # the documents, in sorted-id order
            # block by block into one preallocated array, as the local engine fills its batches
            # (one gather of every document's sentences would be 4x the result)
            out = np.empty((self.n_docs, self.sent_emb.shape[1]), dtype=np.float32)
            for lo in range(0, self.n_docs, 65_536):
                docs = self.doc_sentences[lo:lo + 65_536]
                flat = np.concatenate([np.asarray(s, dtype=np.int64) for s in docs])
                starts = np.cumsum([0] + [len(s) for s in docs[:-1]])
                part = np.add.reduceat(self.sent_emb[flat], starts, axis=0)
                part /= np.linalg.norm(part, axis=1, keepdims=True)
                out[lo:lo + len(docs)] = part
            return out
        out = np.empty((len(inputs), self.name_emb.shape[1]), dtype=np.float32)
        for i, text in enumerate(inputs):
            j = self.name_index.get(text)
            if j is not None:
                out[i] = self.name_emb[j]
                continue
            name, _, desc = text.partition(": ")
            v = self.name_emb[self.name_index[name]] + self.sent_emb[self.desc_sentence[desc]]
            out[i] = v / np.linalg.norm(v)
        return out

    def summary(self) -> dict:
        return {"engine": self.name}


class RssByStep:
    """A thread that samples this process' RSS every ``every`` seconds and keeps the largest
    seen in each pipeline function (the seven outermost ``mteb_stratified`` frames below
    ``build_structure``), to say where the peak is."""

    def __init__(self, every: float = 0.2) -> None:
        import threading
        self.every, self.peaks = every, {}
        self.wall: dict = {}   # the 4 outermost pipeline frames -> sampled wall seconds
        self.cpu: dict = {}    # ... and the process' CPU seconds between samples
        self._main = threading.main_thread().ident
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _where(self) -> str:
        frame = sys._current_frames().get(self._main)
        chain = []
        while frame is not None:
            f = frame.f_code.co_filename
            if "mteb_stratified" in f:
                chain.append(f"{os.path.basename(f)[:-3]}.{frame.f_code.co_name}")
            frame = frame.f_back
        chain.reverse()  # outermost first
        if chain and chain[0].endswith("build_structure"):
            chain = chain[1:]
        return " > ".join(chain[:7]) or "(outside the pipeline)"

    def _run(self) -> None:
        last_t, last_cpu = time.perf_counter(), time.process_time()
        while not self._stop.wait(self.every):
            rss = _rss_now_mib()
            where = self._where()
            if rss > self.peaks.get(where, 0.0):
                self.peaks[where] = rss
            now_t, now_cpu = time.perf_counter(), time.process_time()
            key = " > ".join(where.split(" > ")[:4])
            self.wall[key] = self.wall.get(key, 0.0) + now_t - last_t
            self.cpu[key] = self.cpu.get(key, 0.0) + now_cpu - last_cpu
            last_t, last_cpu = now_t, now_cpu

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def top(self, n: int = 8) -> list:
        return [[w, round(r, 1)] for w, r in sorted(self.peaks.items(), key=lambda kv: -kv[1])[:n]]

    def time_split(self, n: int = 25, least: float = 0.5) -> list:
        """``[function chain, wall s, CPU s]`` of the sampled chains, longest first (those
        over ``least`` wall seconds)."""
        rows = sorted(self.wall.items(), key=lambda kv: -kv[1])[:n]
        return [[w, round(t, 1), round(self.cpu.get(w, 0.0), 1)] for w, t in rows if t >= least]


def run_one(n: int, cache: str, out: str, clusters: str, consensus_runs: int | None,
            entity_embedding: str = "static") -> dict:
    """One build of the synthetic corpus of ``n`` documents in this process (a subprocess of
    :func:`main`); returns its figures."""
    from mteb_stratified.structure.extractors import SpacyNounChunkExtractor
    from mteb_stratified.structure.pipeline import BuildReport, StructureConfig, build_structure

    t0 = time.perf_counter()
    with open(os.path.join(cache, "sentences.json")) as fh:
        pool = json.load(fh)
    doc_sentences = synthetic_docs(n, pool["abstracts"])
    sentences = pool["sentences"]
    doc_ids = [f"S{i:07d}" for i in range(n)]
    corpus = {d: {"title": "", "text": " ".join(sentences[s] for s in ss)}
              for d, ss in zip(doc_ids, doc_sentences)}
    texts = [corpus[d]["text"] for d in doc_ids]
    engine = SyntheticEngine(cache, doc_sentences, doc_ids, texts)
    del texts, pool, sentences
    extractor = SpacyNounChunkExtractor()
    extractor.params()  # loads spaCy, as the CLI's driver does
    setup_s = time.perf_counter() - t0
    before_rss, before_peak = _rss_now_mib(), _peak_mib()
    if os.path.exists(out):
        shutil.rmtree(out)
    cfg = StructureConfig(clusters=clusters, entity_embedding=entity_embedding,
                          **({} if consensus_runs is None else
                             {"consensus_runs": consensus_runs}))
    report = BuildReport()
    load_before = machine_load()
    t, cpu = time.perf_counter(), time.process_time()
    with RssByStep() as sampler:
        art = build_structure(corpus, cfg, out=out, extractor=extractor, engine=engine,
                              report=report)
    build_s, build_cpu_s = time.perf_counter() - t, time.process_time() - cpu
    stats = art.metadata["stats"]
    return {"n_docs": n, "clusters": clusters, "consensus_runs": cfg.consensus_runs,
            "entity_embedding": entity_embedding,
            "setup_s": round(setup_s, 1), "build_s": round(build_s, 1),
            "build_cpu_s": round(build_cpu_s, 1),
            "load_before": load_before, "load_after": machine_load(),
            "rss_before_build_mib": round(before_rss, 1),
            "peak_before_build_mib": round(before_peak, 1),
            "peak_rss_mib": round(_peak_mib(), 1),
            "timings_s": {k: round(v, 2) for k, v in report.timings.items()},
            "cpu_s": {k: round(v, 2) for k, v in report.cpu_timings.items()},
            "time_by_function": sampler.time_split(),
            "rss_by_step_mib": sampler.top(25),
            "vocabulary": stats["vocabulary"], "normalised_names": stats["normalised_names"],
            "n_clusters": stats["clusters"], "edges": stats["edges"]}


#: The steps of the document map once the documents are embedded (the issue's "k-NN graph,
#: Leiden, tree, labels and coverage"): ``leiden`` holds the k-NN search, the consensus Leiden
#: and the document tree; ``weights`` the tables, terms and labels; ``quality`` the NPMI and
#: seed-stability figures; ``tree`` is the entity map's (not run for the document map).
MAP_STEPS = ("leiden", "tree", "weights", "quality")


def map_seconds(r: dict, field: str) -> float:
    return float(sum(r[field].get(k, 0.0) for k in MAP_STEPS))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 300_000])
    p.add_argument("--clusters", choices=("documents", "entities"), default="documents")
    p.add_argument("--consensus-runs", type=int, default=None,
                   help="Leiden consensus runs (default: the pipeline's, StructureConfig)")
    p.add_argument("--entity-embedding", choices=("static", "model"), default="static",
                   help="how the entity names are embedded (the pipeline's option; default "
                        "its default, static)")
    p.add_argument("--cache", default="/tmp/bench_structure_driver")
    p.add_argument("--corpus", default=NFCORPUS)
    p.add_argument("--prepare-only", action="store_true")
    p.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)
    p.add_argument("--out", default=None, help=argparse.SUPPRESS)
    p.add_argument("--timeout", type=int, default=7200)
    args = p.parse_args()
    if args.one is not None:
        print("RESULT " + json.dumps(run_one(args.one, args.cache, args.out, args.clusters,
                                             args.consensus_runs, args.entity_embedding)),
              flush=True)
        return
    if args.consensus_runs is None:
        from mteb_stratified.structure.pipeline import StructureConfig
        args.consensus_runs = StructureConfig().consensus_runs
    if not os.path.exists(os.path.join(args.cache, "DONE")):
        prepare(args.cache, args.corpus)
    if args.entity_embedding == "static":  # the distilled table, cached before any measure
        from mteb_stratified.structure.static_embed import distill
        distill()
    if args.prepare_only:
        return
    print_command()
    print("driver peak memory of build_structure on a SYNTHETIC corpus (NFCorpus sentences; "
          "rows composed from per-sentence extractions, embeddings looked up: see the "
          f"docstring); --clusters {args.clusters}, --consensus-runs {args.consensus_runs}, "
          f"--entity-embedding {args.entity_embedding}",
          flush=True)
    results = []
    for n in args.sizes:
        out = os.path.join(args.cache, f"out-{os.getpid()}-{n}")  # one per bench run
        cmd = [sys.executable, os.path.abspath(__file__), "--one", str(n), "--out", out,
               "--cache", args.cache, "--clusters", args.clusters,
               "--consensus-runs", str(args.consensus_runs),
               "--entity-embedding", args.entity_embedding]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"n={n}: timed out after {args.timeout} s", flush=True)
            break
        line = [x for x in res.stdout.splitlines() if x.startswith("RESULT ")]
        if res.returncode != 0 or not line:
            print(f"n={n}: failed (rc {res.returncode})\n{res.stderr[-3000:]}", flush=True)
            break
        r = json.loads(line[-1][7:])
        results.append(r)
        shutil.rmtree(out, ignore_errors=True)
        steps = ", ".join(f"{k} {v}" + (f"/{r['cpu_s'][k]:.1f}" if k in r["cpu_s"] else "")
                          for k, v in r["timings_s"].items())
        print(f"n={n:>9,}: peak {r['peak_rss_mib'] / 1024:6.2f} GiB (before build "
              f"{r['rss_before_build_mib'] / 1024:.2f} GiB); build {r['build_s']} s wall, "
              f"{r['build_cpu_s']} s CPU [step wall/CPU s: {steps}]; map steps "
              f"{map_seconds(r, 'timings_s'):.1f} s wall, {map_seconds(r, 'cpu_s'):.1f} s CPU; "
              f"vocabulary {r['vocabulary']:,} of {r['normalised_names']:,} names, "
              f"{r['n_clusters']} clusters; load before/after {r['load_before']} / "
              f"{r['load_after']}", flush=True)
        print("  " + json.dumps(r), flush=True)
    if len(results) >= 2:
        a, b = results[-2], results[-1]
        slope = (b["peak_rss_mib"] - a["peak_rss_mib"]) / ((b["n_docs"] - a["n_docs"]) / 1000)
        inner = ((b["peak_rss_mib"] - b["rss_before_build_mib"])
                 - (a["peak_rss_mib"] - a["rss_before_build_mib"])) / (
                     (b["n_docs"] - a["n_docs"]) / 1000)
        proj = b["peak_rss_mib"] + slope * (8_800_000 - b["n_docs"]) / 1000
        print(f"slope {a['n_docs']:,} -> {b['n_docs']:,}: {slope:.2f} MiB per 1k documents "
              f"(peak RSS; of which the build itself, peak minus RSS before it: {inner:.2f}); "
              f"linear projection to 8.8M documents of this kind: {proj / 1024:.1f} GiB",
              flush=True)
        for what, key in (("build", None), ("map steps", "map")):
            for unit, field in (("wall", "timings_s"), ("CPU", "cpu_s")):
                ta, tb = ((x["build_s" if unit == "wall" else "build_cpu_s"] if key is None
                           else map_seconds(x, field)) for x in (a, b))
                per_k = (tb - ta) / ((b["n_docs"] - a["n_docs"]) / 1000)
                at = tb + per_k * (8_800_000 - b["n_docs"]) / 1000
                print(f"  {what}, {unit}: {per_k:.3f} s per 1k documents; linear projection "
                      f"to 8.8M: {at:,.0f} s ({at / 3600:.2f} h)", flush=True)


if __name__ == "__main__":
    main()
