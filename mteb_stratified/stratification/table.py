"""Per-query strata as data: one row per judged query, to join with per-query metrics.

Columns: ``query_id``, ``cluster`` (the fine primary cluster c*(q)), ``cluster_label``,
``evaluated_stratum`` (the stratum of the evaluated grain that holds the cluster, e.g.
``L5.0 (rest)``: :mod:`.grain`), ``evaluated_label``, ``stratum`` (the fine cell label,
``c12/Low/N/A``), ``dispersion`` (Δ, empty when N/A), ``dispersion_bin``, ``alignment`` (J,
empty when N/A), ``alignment_bin``, ``lexical_containment`` (:mod:`.lexical`), ``n_relevant``
(|rel(q)|), ``membership`` (the query's cluster profile p_q(c), ``c:share`` for its largest 5
clusters), ``excluded`` (the reason, for a judged query that was not stratified).
"""

from __future__ import annotations

import csv
import io
import math
from ..io.outputs import atomic_write

__all__ = ["COLUMNS", "strata_rows", "strata_table_text", "write_strata_table"]

COLUMNS = ("query_id", "cluster", "cluster_label", "evaluated_stratum", "evaluated_label",
           "stratum", "dispersion", "dispersion_bin", "alignment", "alignment_bin",
           "lexical_containment", "n_relevant", "membership", "excluded")


def _num(x) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.6g}"


def strata_rows(strata, artifact, qrels: dict, grain=None) -> list[dict]:
    """The rows of the table (module docstring), stratified queries first, in strata order.

    ``grain``: a :class:`.grain.Grain` (a :class:`.summary.StratifiedSummary`'s ``grain``: its
    evaluated strata and their fine clusters); without it the evaluated columns are empty."""
    labels = artifact.cluster_labels
    rec = strata.records()
    evaluated = {}
    for s in (grain.strata if grain is not None else ()):
        for c in s.clusters:
            evaluated[c] = (s.name, s.label)
    lexical = strata.lexical
    rows = []
    for i, q in enumerate(strata.queries):
        r = rec[q]
        member = sorted(strata.membership_of(q).items(), key=lambda kv: (-kv[1], kv[0]))[:5]
        rows.append({
            "query_id": q, "cluster": r["cluster"], "cluster_label": labels.get(r["cluster"], ""),
            "evaluated_stratum": evaluated.get(r["cluster"], ("", ""))[0],
            "evaluated_label": evaluated.get(r["cluster"], ("", ""))[1],
            "stratum": f"c{r['cluster']}/{r['dispersion_bin']}/{r['alignment_bin']}",
            "dispersion": _num(r["dispersion"]), "dispersion_bin": r["dispersion_bin"],
            "alignment": _num(r["alignment"]), "alignment_bin": r["alignment_bin"] or "",
            "lexical_containment": "" if lexical is None else _num(float(lexical[i])),
            "n_relevant": sum(1 for g in qrels.get(q, {}).values() if g >= strata.level),
            "membership": " ".join(f"c{c}:{v:.3f}" for c, v in member), "excluded": ""})
    for e in strata.excluded:
        rows.append({k: "" for k in COLUMNS} | {
            "query_id": e.qid, "excluded": e.reason,
            "n_relevant": sum(1 for g in qrels.get(e.qid, {}).values() if g >= strata.level)})
    return rows


def strata_table_text(rows: list[dict]) -> str:
    """The rows as tab-separated text with a header (tabs and newlines in a value become
    spaces)."""
    buffer = io.StringIO(newline="")
    w = csv.DictWriter(buffer, fieldnames=COLUMNS, delimiter="\t", lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: str(r.get(k, "")).replace("\t", " ").replace("\n", " ")
                    for k in COLUMNS})
    return buffer.getvalue()


def write_strata_table(path: str, rows: list[dict]) -> None:
    """Write the rows as a tab-separated file with a header (atomically)."""
    with atomic_write(path, encoding="utf-8", newline="") as fh:
        fh.write(strata_table_text(rows))
