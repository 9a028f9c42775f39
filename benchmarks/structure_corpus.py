"""``bench_structure.py --corpus FOLDER``: the ``structure`` command on a real corpus, step by
step, cold, before and after, with extraction and embedding against their floors.

    python benchmarks/bench_structure.py --corpus mteb_stratified/data/nfcorpus \
        --rev before=42e26c9 --rev after=WORKTREE [--docs 5000]

For each ``--rev NAME=REV`` (a git revision, checked out into a temporary worktree, or
``WORKTREE``: this checkout as it is; ``--args NAME="ARGS"`` adds command-line arguments to
that one, e.g. ``--rev fast=WORKTREE --args fast="--document-embedding static"``) it runs, in a
fresh process:

    python -m mteb_stratified structure --corpus SLICE -o TMP --json --no-progress --keep-work

with an empty cache folder (``MTEB_STRATIFIED_CACHE``): *cold*, so the one-off distillation of
the static embedding is inside the time.  It prints the wall time and each step's time from
the command's own report, and the artifact's quality figures (clusters, modularity, NPMI,
grab-bag share, the seed ARI and its method).  For the revisions that know ``--seed-ari``, a
second, untimed run in a copy of the work folder (extraction resumed from its checkpoint) gives
the seed ARI by the old method too (``second-build``), so the before/after comparison is on one
definition.

With two or more revisions it prints each one's *agreement* with the first: the adjusted Rand
index of their partitions of the documents (each document's heaviest cluster), to read against
the seed ARIs, the noise of one build.  ``--keep DIR`` keeps each artifact in ``DIR/NAME`` (for
``strata_power.py --structure DIR/NAME``).

The floors, timed in their own processes on the same inputs:
* extraction: spaCy's own ``nlp.pipe`` over the documents, with the extractor's pipeline (the
  same components excluded, the same ``batch_size`` and ``n_process``), nothing done with the
  parses; the extractor's time over this one;
* embedding: the static lookup (:class:`mteb_stratified.structure.static_embed.StaticEmbedding`,
  distilled beforehand, not timed) of the same inputs the structure embeds: the entity names,
  ``name: description``, and the documents (the document map).

``--docs N`` builds the corpus first: the folder's documents (sorted ids), and when N is larger
than the corpus (NFCorpus has 3,633), further documents made from the folder's own abstracts
with their sentences in reverse order (new ids ``<id>-r``): the same words and lengths, new
texts.  The queries are copied and the qrels kept for the documents in it, so the bins come
from the same reference split.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from _harness import load_1m, portable_path, print_command

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SENT = re.compile(r"(?<=[.!?])\s+")


def read_corpus(folder: str) -> list[dict]:
    """The documents of a BEIR folder, sorted by id."""
    src = os.path.join(folder, "corpus.jsonl.gz")
    opener = gzip.open if os.path.exists(src) else open
    src = src if os.path.exists(src) else os.path.join(folder, "corpus.jsonl")
    with opener(src, "rt", encoding="utf-8") as fh:
        return sorted((json.loads(line) for line in fh if line.strip()), key=lambda d: d["_id"])


def make_slice(folder: str, n_docs: int | None, out: str) -> str:
    """A BEIR folder of ``n_docs`` documents (module docstring); ``folder`` itself when None."""
    if n_docs is None:
        return folder
    docs = read_corpus(folder)
    rows = docs[:n_docs]
    i = 0
    while len(rows) < n_docs:
        d = docs[i % len(docs)]
        sentences = _SENT.split(d.get("text", ""))
        rows.append({"_id": f"{d['_id']}-r", "title": d.get("title", ""),
                     "text": " ".join(reversed(sentences))})
        i += 1
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "corpus.jsonl"), "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps({"_id": r["_id"], "title": r.get("title", ""),
                                 "text": r.get("text", "")}) + "\n")
    for name in ("queries.jsonl.gz", "queries.jsonl"):
        if os.path.exists(os.path.join(folder, name)):
            shutil.copy(os.path.join(folder, name), out)
    keep = {r["_id"] for r in rows}
    qrels = os.path.join(folder, "qrels")
    os.makedirs(os.path.join(out, "qrels"), exist_ok=True)
    for name in sorted(os.listdir(qrels)) if os.path.isdir(qrels) else []:
        with open(os.path.join(qrels, name), encoding="utf-8", newline="") as fh:
            lines = fh.read().splitlines(keepends=True)
        with open(os.path.join(out, "qrels", name), "w", encoding="utf-8", newline="") as fh:
            fh.writelines(lines[:1] + [ln for ln in lines[1:] if len(ln.split("\t")) > 1
                                       and ln.split("\t")[1] in keep])
    return out


def checkout(rev: str, tmp: str) -> str:
    """A source tree of ``rev`` (a temporary git worktree with the compiled kernel copied in),
    or this checkout for ``WORKTREE``."""
    if rev == "WORKTREE":
        return ROOT
    path = os.path.join(tmp, f"tree-{rev}")
    subprocess.run(["git", "-C", ROOT, "worktree", "add", "-q", "--detach", path, rev],
                   check=True)
    core = os.path.join(ROOT, "mteb_stratified", "core")
    for name in os.listdir(core):
        if name.startswith("_walk") and name.endswith(".so"):
            shutil.copy(os.path.join(core, name), os.path.join(path, "mteb_stratified", "core"))
    return path


def structure_run(tree: str, corpus: str, out: str, cache: str, extra=()) -> dict:
    env = {**os.environ, "PYTHONPATH": tree, "MTEB_STRATIFIED_CACHE": cache,
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [sys.executable, "-m", "mteb_stratified", "structure", "--corpus", corpus, "-o", out,
           "--json", "--no-progress", "--keep-work", *extra]
    t = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=tree, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"structure failed ({proc.returncode}): {proc.stderr[-2000:]}")
    summary = json.loads(proc.stdout)
    with open(os.path.join(out, "metadata.json"), encoding="utf-8") as fh:
        meta = json.load(fh)
    return {"wall": wall, "timings": summary.get("timings_s", {}), "summary": summary,
            "quality": meta.get("quality", {}), "parameters": meta.get("parameters", {})}


_SPACY_FLOOR = r"""
import json, sys, time
from mteb_stratified.structure.extractors import SpacyNounChunkExtractor
texts = json.load(open(sys.argv[1]))
ex = SpacyNounChunkExtractor()
nlp = ex._load()
n_process = ex._n_process(len(texts))
t = time.perf_counter()
for doc in nlp.pipe(texts, batch_size=ex.batch_size, n_process=n_process):
    pass
print(json.dumps({"seconds": time.perf_counter() - t, "n_process": n_process,
                  "pipes": nlp.pipe_names}))
"""

_STATIC_FLOOR = r"""
import json, sys, time
from mteb_stratified.structure.static_embed import distill
inputs = json.load(open(sys.argv[1]))
model = distill(None)
model.encode(["warm up"])
t = time.perf_counter()
for texts in inputs.values():
    model.encode(texts)
print(json.dumps({"seconds": time.perf_counter() - t,
                  "texts": {k: len(v) for k, v in inputs.items()}}))
"""


def floors(corpus: str, artifact: str, tmp: str, cache: str) -> dict:
    """The spaCy ``nlp.pipe`` and static-lookup floors (module docstring), in subprocesses."""
    from mteb_stratified.io.corpus_text import doc_text

    texts = [doc_text(d) for d in read_corpus(corpus)]
    with gzip.open(os.path.join(artifact, "entities.jsonl.gz"), "rt", encoding="utf-8") as fh:
        ents = [json.loads(line) for line in fh]
    inputs = {"names": [e["name"] for e in ents],
              "name: description": [f"{e['name']}: {e['description']}" if e.get("description")
                                    else e["name"] for e in ents],
              "documents": texts}
    tfile, ifile = os.path.join(tmp, "texts.json"), os.path.join(tmp, "inputs.json")
    with open(tfile, "w") as fh:
        json.dump(texts, fh)
    with open(ifile, "w") as fh:
        json.dump(inputs, fh)
    env = {**os.environ, "PYTHONPATH": ROOT, "MTEB_STRATIFIED_CACHE": cache}
    out = {}
    for name, code, arg in (("spacy", _SPACY_FLOOR, tfile), ("static", _STATIC_FLOOR, ifile)):
        proc = subprocess.run([sys.executable, "-c", code, arg], env=env, capture_output=True,
                              text=True, cwd=ROOT)
        if proc.returncode != 0:
            raise SystemExit(f"{name} floor failed: {proc.stderr[-2000:]}")
        out[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def doc_partition(artifact: str) -> dict:
    """Each document's cluster in ``artifact`` (its heaviest ``doc_clusters`` weight; ties: the
    lowest cluster id)."""
    with gzip.open(os.path.join(artifact, "doc_clusters.jsonl.gz"), "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    return {r["doc_id"]: min(r["weights"], key=lambda c: (-r["weights"][c], int(c)))
            for r in rows if r["weights"]}


def partition_ari(a: str, b: str) -> tuple[float, int]:
    """The adjusted Rand index of two artifacts' document partitions (:func:`doc_partition`),
    over the documents both place, and how many those are."""
    from mteb_stratified.structure.quality import adjusted_rand

    pa, pb = doc_partition(a), doc_partition(b)
    both = sorted(set(pa) & set(pb))
    return adjusted_rand([int(pa[d]) for d in both], [int(pb[d]) for d in both]), len(both)


QUALITY = ("clusters", "npmi_weighted", "npmi_median", "grab_bag_mass_share", "seed_ari",
           "seed_ari_method")


def main(args) -> int:
    sys.stdout.reconfigure(line_buffering=True)  # each line out as it is made
    tmp = tempfile.mkdtemp(prefix="bench-structure-")
    try:
        corpus = make_slice(os.path.abspath(args.corpus), args.docs, os.path.join(tmp, "corpus"))
        n_docs = len(read_corpus(corpus))
        print_command()
        print(f"# bench_structure --corpus {portable_path(args.corpus)}"
              + (f" --docs {args.docs}" if args.docs else "") + f"  ({time.strftime('%Y-%m-%d')}"
              f", cpus {os.cpu_count()}, load {load_1m():.1f} at start)")
        if args.docs:
            print(f"corpus: {n_docs} documents ({args.docs} asked; beyond the folder's own, its "
                  "abstracts with their sentences reversed)")
        results = {}
        for spec in args.rev:
            name, _, rev = spec.partition("=")
            tree = checkout(rev or name, tmp)
            cache = os.path.join(tmp, f"cache-{name}")  # empty: cold
            out = os.path.join(tmp, f"out-{name}")
            extra = (args.args or {}).get(name, "").split()
            res = structure_run(tree, corpus, out, cache, extra)
            res["load"] = load_1m()
            if res["quality"].get("seed_ari_method", "second-build") != "second-build":
                other = os.path.join(tmp, f"out-{name}-second")
                os.makedirs(other)
                shutil.copytree(os.path.join(out, ".work"), os.path.join(other, ".work"))
                res["second_build_seed_ari"] = structure_run(
                    tree, corpus, other, cache, [*extra, "--seed-ari", "second-build"]
                )["quality"].get("seed_ari")
            else:
                res["second_build_seed_ari"] = res["quality"].get("seed_ari")
            res["out"] = out
            results[name] = res
            t = res["timings"]
            print(f"\n## {name} ({rev or name}{' ' + ' '.join(extra) if extra else ''}): "
                  f"wall {res['wall']:.1f} s (load {res['load']:.1f} after)")
            print("  steps (s): " + ", ".join(f"{k} {v:.1f}" for k, v in t.items()))
            steps = sum(v for k, v in t.items() if k != "total")
            print(f"  bins and the rest of `total`: {t.get('total', 0) - steps:.1f} s; start-up, "
                  f"corpus read and writing: {res['wall'] - t.get('total', 0):.1f} s")
            q = res["quality"]
            print("  quality: " + ", ".join(f"{k} {q.get(k)!r}" if isinstance(q.get(k), str)
                                            else f"{k} {q.get(k, float('nan')):.4g}"
                                            for k in QUALITY if k in q)
                  + f", seed ARI (second-build) {res['second_build_seed_ari']:.4f}")
            p = res["parameters"]
            print(f"  embeddings: entities {p.get('entity_embedding', 'model')}, documents "
                  f"{p.get('document_embedding', 'model')}; modularity "
                  f"{res['summary'].get('modularity')}")
        if len(results) > 1:
            first = list(results)[0]
            print(f"\n## agreement with {first}: ARI of the documents' clusters (each document's "
                  "heaviest cluster), against the seed ARIs above as the noise of one build")
            for name, res in list(results.items())[1:]:
                ari, n = partition_ari(results[first]["out"], res["out"])
                res[f"ari_vs_{first}"] = ari
                print(f"  {name}: {ari:.4f} over {n} documents")
        last = results[list(results)[-1]]
        fl = floors(corpus, last["out"], tmp, os.path.join(tmp, f"cache-{list(results)[-1]}"))
        print(f"\n## floors (same documents; {fl['spacy']['n_process']} spaCy processes, pipes "
              f"{fl['spacy']['pipes']})")
        print(f"  spaCy nlp.pipe alone: {fl['spacy']['seconds']:.1f} s; static lookup of "
              f"{fl['static']['texts']}: {fl['static']['seconds']:.2f} s")
        print("  name            extract/floor   embed (entities+documents)/floor")
        for name, res in results.items():
            t = res["timings"]
            emb = t.get("embed", 0) + t.get("embed_documents", 0)
            print(f"  {name:<15} {t.get('extract', 0) / fl['spacy']['seconds']:>12.2f}x"
                  f"   {emb / fl['static']['seconds']:>10.1f}x ({emb:.1f} s)")
        if args.json:
            with open(args.json, "w") as fh:
                json.dump({"results": {k: {kk: vv for kk, vv in v.items() if kk != "out"}
                                       for k, v in results.items()}, "floors": fl}, fh,
                          indent=1, default=str)
        if args.keep:
            for name, res in results.items():
                shutil.copytree(res["out"], os.path.join(args.keep, name),
                                ignore=shutil.ignore_patterns(".work"))
        return 0
    finally:
        for name in os.listdir(tmp):
            if name.startswith("tree-"):
                subprocess.run(["git", "-C", ROOT, "worktree", "remove", "--force",
                                os.path.join(tmp, name)], check=False)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":  # a part of bench_structure.py: --help says so, and how to run it
    import argparse

    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.
                            RawDescriptionHelpFormatter).parse_known_args()
    print("structure_corpus.py is run by bench_structure.py: python benchmarks/"
          "bench_structure.py --corpus FOLDER [--docs N] [--rev NAME=REV ...]", file=sys.stderr)
    raise SystemExit(2)
