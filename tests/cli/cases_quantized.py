"""``precision-sweep`` with the quantized regimes (#47): bad settings exit 2 and say what is
valid, before any model loads."""

from __future__ import annotations

import json

from bad_inputs import Case, Error


def _tiny_beir(n_docs: int) -> dict:
    """A BEIR folder of ``n_docs`` short documents, two queries and their qrels."""
    docs = "".join(json.dumps({"_id": f"d{i}", "title": "", "text": f"document number {i}"})
                   + "\n" for i in range(n_docs))
    queries = "".join(json.dumps({"_id": q, "text": f"query {q}"}) + "\n" for q in ("q1", "q2"))
    return {"beir/": "", "beir/corpus.jsonl": docs, "beir/queries.jsonl": queries,
            "beir/qrels/": "", "beir/qrels/test.tsv": "query-id\tcorpus-id\tscore\n"
                                                        "q1\td1\t1\nq2\td2\t1\n"}


def cases() -> list[Case]:
    sweep = ("precision-sweep", "--out", "{o}", "--quiet")
    small = _tiny_beir(40)
    return [
        Case("quantized-unknown-regime", "#47 an unknown regime lists the valid ones", {},
             (*sweep, "--regimes", "int4"),
             Error("=int4", None, r"valid regimes: .*int8, binary, binary\+rescore")),
        Case("quantized-multiplier-zero", "#47 a rescore multiplier below 1", {},
             (*sweep, "--regimes", "binary+rescore", "--rescore-multiplier", "0"),
             Error("--rescore-multiplier", None, r"integer >= 1")),
        Case("quantized-multiplier-text", "#47 a non-numeric rescore multiplier", {},
             (*sweep, "--regimes", "binary+rescore", "--rescore-multiplier", "two"),
             Error("--rescore-multiplier", None, r"must be an integer >= 1")),
        Case("quantized-multiplier-unused", "#47 rescoring settings with no rescoring regime "
             "would be silently ignored", {},
             (*sweep, "--regimes", "binary", "--rescore-multiplier", "4"),
             Error("--rescore-multiplier", None, r"no regime rescores")),
        Case("quantized-cut-draws-unused", "#47 --cut-draws without a rescoring regime would be "
             "silently ignored", {}, (*sweep, "--regimes", "binary", "--cut-draws", "5"),
             Error("--cut-draws", None, r"no regime rescores")),
        Case("quantized-seed-unused", "#47 --seed only seeds the rescore's cut draws", {},
             (*sweep, "--regimes", "int8", "--seed", "3"),
             Error("--seed", None, r"no regime rescores")),
        Case("quantized-int8-calibration", "#47 int8 calibrated on fewer than 100 embeddings",
             small, (*sweep, "--task", "{beir/}", "--regimes", "fp32", "int8"),
             Error("beir/", None, r"(?s)at least 100 .*40 documents.*binary regimes")),
        Case("quantized-rescore-int8-calibration", "#47 int8 rescoring vectors need the same "
             "calibration", small, (*sweep, "--task", "{beir/}", "--regimes", "binary+rescore",
                                    "--rescore-docs", "int8"),
             Error("beir/", None, r"binary\+rescore\[int8,x2\] calibrates the int8 ranges")),
    ]
