"""A small real BEIR dataset for generation tests: an NFCorpus slice and its structure.

The slice holds the relevant documents of the first ``n_queries`` NFCorpus test queries (at most
``per_query`` each) plus filler documents, ``n_docs`` in all; its test split judges the first
``n_original`` of those queries, so some clusters of the slice have no query.
"""

from __future__ import annotations

import json
import os


def write_slice(folder, *, n_docs: int = 160, n_queries: int = 40, per_query: int = 4,
                n_original: int = 12) -> dict:
    from mteb_stratified.io import bundled_path, load_beir
    data = load_beir(bundled_path("nfcorpus"), "test")
    qids = sorted(data.qrels)[:n_queries]
    chosen: dict = {}
    for q in qids:
        rel = sorted(d for d, g in data.qrels[q].items() if g >= 1)[:per_query]
        chosen.update(dict.fromkeys(rel))
    for d in sorted(data.corpus):
        if len(chosen) >= n_docs:
            break
        chosen.setdefault(d)
    docs = {d: data.corpus[d] for d in sorted(chosen)}
    os.makedirs(os.path.join(folder, "qrels"), exist_ok=True)
    with open(os.path.join(folder, "corpus.jsonl"), "w") as fh:
        for d, doc in docs.items():
            fh.write(json.dumps({"_id": d, **doc}) + "\n")
    with open(os.path.join(folder, "queries.jsonl"), "w") as fh:
        for q in qids:
            fh.write(json.dumps({"_id": q, "text": data.queries[q]}) + "\n")
    for split, keep in (("test", qids[:n_original]), ("dev", qids[n_original:])):
        with open(os.path.join(folder, "qrels", f"{split}.tsv"), "w") as fh:
            fh.write("query-id\tcorpus-id\tscore\n")
            for q in keep:
                for d, g in sorted(data.qrels[q].items()):
                    if d in docs:
                        fh.write(f"{q}\t{d}\t{g}\n")
    return docs


def build_slice(root) -> tuple[str, str]:
    """(BEIR folder, structure folder) of the slice; the structure's bins come from dev."""
    from mteb_stratified.cli import main as cli_main
    folder = os.path.join(root, "beir")
    out = os.path.join(root, "structure")
    write_slice(folder)
    code = cli_main.main(["structure", "--corpus", folder, "--out", out, "--no-progress",
                          "--max-doc-share", "0.3", "--json"])
    if code != 0:
        raise RuntimeError("structure build failed")
    return folder, out
