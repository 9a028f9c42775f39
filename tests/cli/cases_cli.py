"""Bad-input cases of the command line as a whole (issue #46): a terminal escape in a name read
from a file, options nested too deep, a model the hub cannot give, a document longer than
spaCy's limit, and errors that must name their file.  Loaded by
``bad_inputs.py`` (every ``cases_*.py`` beside it)."""

from __future__ import annotations

import json
import os

from bad_inputs import Case, Error, Works, _per_query_csv, _results_json, _trec_qrels, _trec_run

_ESC = "\x1b[2J\x1b[31m"  # clear the screen, then red: what a hostile name would send
_RES, _PQ = "res/StratifiedNFCorpus.json", "res/StratifiedNFCorpus_per_query.csv"
_DOCS = ["Vitamin D deficiency is common in elderly patients with osteoporosis and fractures.",
         "Dietary fiber lowers cholesterol and the risk of heart disease in adults.",
         "Green tea polyphenols show antioxidant activity and lower cholesterol in vitro.",
         "Vitamin D and calcium supplements reduce fractures in elderly patients."]


def _qids(n: int = 30) -> list:
    from mteb_stratified.io import bundled_path, load_beir

    return sorted(load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels)[:n]


def _corpus(texts) -> str:
    return "".join(json.dumps({"_id": f"d{i}", "title": "", "text": t}) + "\n"
                   for i, t in enumerate(texts))


def _no_escape(paths, stdout):
    """Nothing printed holds a raw escape character; the name is shown escaped."""
    if "\x1b" in stdout:
        return f"a raw ESC was printed: {stdout[stdout.index(chr(27)) - 40:][:120]!r}"
    return None if "\\x1b" in stdout else "the escaped name is not shown"


def _built(n_docs: int):
    def check(paths, stdout):
        meta = json.load(open(os.path.join(paths["o"], "metadata.json")))
        got = meta["corpus"]["n_docs"]
        return None if got == n_docs else f"{got} documents mapped, not {n_docs}"
    return check


def _escape_cases() -> list[Case]:
    """#46.12: names from files printed to the terminal raw."""
    bad = f"q{_ESC}1"
    qrels = {bad: {"d1": 1, "d2": 0, "d3": 2}, "q2": {"d4": 1}}
    run = {bad: {"d1": 0.9, "d2": 0.8, "d3": 0.1}, "q2": {"d4": 0.3, "d5": 0.7}}
    c = [Case("cli-escape-evaluate-per-query", "#46.12 a query id printed raw by evaluate "
              "--per-query", {"run": _trec_run(run), "qrels": _trec_qrels(qrels)},
              ("evaluate", "--qrels", "{qrels}", "--run", "{run}", "--per-query"),
              Works(_no_escape))]
    qids = _qids()
    files = {}
    for folder, model, n in (("a", f"org/{_ESC}evil", 30), ("b", "org/plain", 20)):
        files[f"{folder}/StratifiedNFCorpus.json"] = _results_json(qids[:n])
        files[f"{folder}/StratifiedNFCorpus_per_query.csv"] = _per_query_csv(qids[:n])
        files[f"{folder}/model_meta.json"] = json.dumps({"name": model, "revision": "r1"})
    c.append(Case("cli-escape-stratify-model-meta", "#46.12 a model_meta.json name printed raw "
                  "by stratify (the note on different query sets)", files,
                  ("stratify", "{a/StratifiedNFCorpus.json}", "{b/StratifiedNFCorpus.json}",
                   "--resamples", "10"), Works(_no_escape)))
    c.append(Case("cli-escape-report-name", "#46.12 a NAME= printed raw by report",
                  {_RES: _results_json(qids), _PQ: _per_query_csv(qids)},
                  ("report", f"sys{_ESC}=" + "{%s}" % _RES, "--resamples", "10", "-o",
                   "{o}/r.html"), Works(_no_escape)))
    return c


def _zero_mass_structure() -> dict:
    """The bundled structure artifact with every cluster's mass set to 0, saved (so its
    completion record is its own) under art/, beside a results file of 30 test queries."""
    import tempfile

    from mteb_stratified.structure.artifact import StructureArtifact

    art = StructureArtifact.bundled("nfcorpus")
    clusters = [{**c, "mass": 0.0, "membership_mass": 0.0} for c in art.clusters]
    qids = _qids()
    files = {_RES: _results_json(qids), _PQ: _per_query_csv(qids), "art/": ""}
    with tempfile.TemporaryDirectory() as tmp:
        folder = StructureArtifact(art.metadata, art.entities, art.doc_entities, clusters,
                                   art.doc_cluster_weights, art.cluster_levels).save(
                                       os.path.join(tmp, "art"))
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name), "rb") as fh:
                files[f"art/{name}"] = fh.read()
    return files


def _named_cases() -> list[Case]:
    """#46.13i: errors that named no file; #46.13d: --model-kwargs nested too deep."""
    qids = _qids()
    unknown = qids[:29] + ["PLAIN-X"]
    files = {_RES: _results_json(unknown), _PQ: _per_query_csv(unknown)}
    zero = _zero_mass_structure()
    return [
        Case("cli-unknown-qid-stratify", "#46.13i a query id the dataset lacks named no file",
             files, ("stratify", "{%s}" % _RES, "--resamples", "10"),
             Error(_PQ, None, "not in the stratified dataset")),
        Case("cli-unknown-qid-report", "#46.13i the same in report", files,
             ("report", "{%s}" % _RES, "--resamples", "10", "-o", "{o}/r.html"),
             Error(_PQ, None, "not in the stratified dataset")),
        Case("cli-all-zero-mass", "#46.13i clusters of mass 0 named no file", zero,
             ("stratify", "{%s}" % _RES, "--structure", "{art/}", "--resamples", "10",
              "--alignment", "exact"), Error("art/clusters.jsonl.gz", None, "mass 0")),
        Case("cli-model-kwargs-nested-60k", "#46.13d --model-kwargs nested 60,000 deep raised "
             "RecursionError", {}, ("mteb", "run", "--model-kwargs", "[" * 60_000),
             Error("--model-kwargs", None, "nested too deeply")),
        Case("cli-model-kwargs-object-60k", "#46.13d the same with objects", {},
             ("mteb", "run", "--model-kwargs", '{"a": ' * 60_000 + "}"),  # one {...}: the
             # harness's "{name}" substitution stays linear
             Error("--model-kwargs", None, "nested too deeply")),
    ]


def _structure_cases() -> list[Case]:
    """#46.13e: a model the hub cannot give; #46.10: a document of over 1,000,000 characters
    (#46.13h, the warning of a corpus that maps nothing, is in test_os_errors.py: a warning
    is not a case's outcome)."""
    long_doc = "Elderly patients with heart disease. " + " ".join(["x" * 999] * 1101)
    return [
        Case("cli-structure-model-not-cached", "#46.13e an unknown model offline raised "
             "OfflineModeIsEnabled", {"c/": "", "c/corpus.jsonl": _corpus(_DOCS)},
             ("structure", "--corpus", "{c/}", "--out", "{o}", "--no-progress",
              "--embedding-model", "nobody-46/no-such-model", "--entity-embedding", "model"),
             Error("=nobody-46/no-such-model", None, "Hugging Face")),
        Case("cli-structure-document-over-1m-chars", "#46.10 a document over 1,000,000 "
             "characters crashed spaCy (E088)",
             {"c/": "", "c/corpus.jsonl": _corpus(_DOCS + [long_doc])},
             ("structure", "--corpus", "{c/}", "--out", "{o}", "--no-progress"),
             Works(_built(len(_DOCS) + 1))),
    ]


def cases() -> list[Case]:
    return _escape_cases() + _named_cases() + _structure_cases()
