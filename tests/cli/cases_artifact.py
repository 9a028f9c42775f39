"""Structure artifacts that are not one complete build (#46.1): ``stratify`` and ``report`` must
refuse them, naming the file and the rebuild command, never use them.

A save killed part-way used to leave one build's ``metadata.json`` beside another build's
tables, and every command trusted the folder (``report`` gave a corpus-weighted estimate of
0.1975 for 0.2282).  ``metadata.json`` now records every table's size and sha256 and is removed
before the first table is replaced (:meth:`StructureArtifact.save`); ``load`` checks the record.
The kills themselves are in tests/structure/test_artifact_atomic.py.
"""

from __future__ import annotations

import gzip
import json

from bad_inputs import Case, Error, _bundled, _per_query_csv, _results_json

_RES, _PQ = "res/StratifiedNFCorpus.json", "res/StratifiedNFCorpus_per_query.csv"
_REBUILD = "mteb-stratified structure --corpus"


def _other_build(table: bytes, n_clusters: int) -> bytes:
    """A doc_clusters table of another build: every document's weights moved to the next
    cluster (valid rows, valid ids; only the record can tell it is not this build's)."""
    rows = [json.loads(line) for line in gzip.decompress(table).splitlines() if line]
    for row in rows:
        row["weights"] = {str((int(c) + 1) % n_clusters): w for c, w in row["weights"].items()}
    text = "".join(json.dumps(r, sort_keys=True, separators=(",", ":")) + "\n" for r in rows)
    return gzip.compress(text.encode("utf-8"), mtime=0)


def cases() -> list[Case]:
    tables, qids = _bundled()
    n_clusters = len(gzip.decompress(tables["clusters.jsonl.gz"]).splitlines())
    meta = json.loads(tables["metadata.json"])

    def files(**change) -> dict:
        out = {_RES: _results_json(qids), _PQ: _per_query_csv(qids), "art/": ""}
        out.update({f"art/{n}": b for n, b in tables.items()})
        out.update({f"art/{n}": b for n, b in change.items()})
        return {k: v for k, v in out.items() if v is not None}

    mixed = files(**{"doc_clusters.jsonl.gz": _other_build(tables["doc_clusters.jsonl.gz"],
                                                           n_clusters)})
    unrecorded = files(**{"metadata.json": json.dumps(
        {k: v for k, v in meta.items() if k != "files"})})
    interrupted = files(**{"metadata.json": None})
    common = ("--structure", "{art/}", "--resamples", "10", "--alignment", "exact")
    stratify = ("stratify", "{%s}" % _RES, *common)
    report = ("report", "{%s}" % _RES, "--out", "{o}/r.html", *common)
    says_mixed = f"(?s)mixes files of two builds.*{_REBUILD}"
    return [
        Case("artifact-mixed-stratify", "#46.1 a folder mixing two builds' tables (a save "
             "killed part-way) was used by stratify", mixed, stratify,
             Error("art/doc_clusters.jsonl.gz", None, says_mixed)),
        Case("artifact-mixed-report", "#46.1 report gave a corpus-weighted estimate from a "
             "folder mixing two builds", mixed, report,
             Error("art/doc_clusters.jsonl.gz", None, says_mixed)),
        Case("artifact-no-completion-record", "#46.1 a metadata.json without the record of "
             "its tables cannot vouch for them", unrecorded, stratify,
             Error("art/metadata.json", None, f"(?s)no completion record.*{_REBUILD}")),
        Case("artifact-interrupted-save", "#46.1 tables without metadata.json (a save killed "
             "after removing it) said 'not a structure artifact'", interrupted, stratify,
             Error("art/", None, f"(?s)incomplete structure artifact.*{_REBUILD}")),
    ]
