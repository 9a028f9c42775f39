"""The Markdown of ``mteb-stratified generate``'s output: ``coverage.md``, the coverage before
and after, the targets, the candidates by rejection reason, the stop, the validity gate and the
LLM usage of a generation or selection run.

It renders the report ``coverage.json`` holds
(:func:`mteb_stratified.generation.output.write_dataset` returns it as ``report``), read at
the boundary into its typed form, :class:`~mteb_stratified.io.coverage_report.CoverageReport`, so
it reads nothing of :mod:`mteb_stratified.generation`: the ``generate`` command writes it
beside ``coverage.json`` (:func:`write_coverage_markdown`).
"""

from __future__ import annotations

import os
from typing import Mapping

from ..io.coverage_report import CoverageReport, ValidityGate
from ..io.markdown import md_cell
from ..io.outputs import atomic_write_text

__all__ = ["coverage_markdown", "gate_markdown", "write_coverage_markdown"]


def write_coverage_markdown(folder: "str | os.PathLike", report: "Mapping | CoverageReport",
                            reasons: Mapping[str, str] | None = None) -> str:
    """Write ``folder/coverage.md`` (:func:`coverage_markdown`) atomically; return its path."""
    path = os.path.join(os.fspath(folder), "coverage.md")
    atomic_write_text(path, coverage_markdown(report, reasons))
    return path


def coverage_markdown(report: "Mapping | CoverageReport",
                      reasons: Mapping[str, str] | None = None) -> str:
    """``coverage.md``: the Markdown of a ``coverage.json`` report (``report``: the dict
    :func:`~mteb_stratified.generation.output.write_dataset` writes there and returns, or its
    :class:`~mteb_stratified.io.coverage_report.CoverageReport`); ``reasons``: ``{rejection reason:
    meaning}`` for the table of rejections (:data:`mteb_stratified.generation.REASONS`)."""
    reasons = reasons or {}
    report = report if isinstance(report, CoverageReport) else CoverageReport.from_dict(report)
    b, a, n = report.before, report.after, report.counts
    rows = [f"# Coverage-aware generation ({md_cell(report.split)})", "",
            "| | queries | MSC | SCC | cell MSC | cell SCC |", "|---|---|---|---|---|---|"]
    for name, cov in (("before", b), ("after", a)):
        rows.append(f"| {name} | {cov.n_queries} | {cov.cluster.msc:.3f} | "
                    f"{cov.cluster.scc:.3f} | {cov.cell.msc:.3f} | {cov.cell.scc:.3f} |")
    if report.gate:
        rows[1:1] = ["", f"**Validity gate: {report.gate.verdict}**"]
    if report.label:
        rows[0:0] = [f"**{report.label}**", ""]
    rows += _splits(report) + _pool(report) + _targets(report)
    rows += ["", f"Candidates: {n.generated}, accepted {n.accepted} "
                 f"({n.accepted_in_target_cell} in their target cell), rejected "
                 f"{n.rejected}.", ""]
    if n.rejected_by_reason:
        rows += ["| rejection reason | n | meaning |", "|---|---|---|"]
        rows += [f"| {r} | {k} | {reasons.get(r, '')} |" for r, k in
                 n.rejected_by_reason.items()]
    rows += ["", f"Stop: {report.stop_reason}.", ""]
    if report.gate:
        rows += gate_markdown(report.gate) + [""]
    u = report.usage
    if u:
        rows.append(f"LLM calls: {u.calls} ({u.paid_calls} sent, "
                    f"{u.cached_calls} from the cache), tokens {u.tokens}, "
                    f"cost ${u.cost_usd}.")
    return "\n".join(rows) + "\n"


def _splits(report: CoverageReport) -> list[str]:
    """The lines that say which split holds what (none without ``splits``)."""
    sp = report.splits
    if not sp:
        return []
    where = (f"Split {md_cell(sp.added)} holds the {sp.kind} queries; "
             + (f"they were also merged into {md_cell(sp.merged_into)} "
                "(--merge-into-split). " if sp.merged_into else
                f"{md_cell(sp.evaluated)} and every other split hold only their original "
                "queries (qrels copied byte for byte). ")
             + f"\"after\" counts the original and the {sp.kind} queries together: it "
             "is coverage, not an evaluation.")
    return ["", where]


def _pool(report: CoverageReport) -> list[str]:
    """A selection's pool and the strata it cannot fill (none without a pool)."""
    pool = report.pool
    if not pool:
        return []
    c = pool.ceiling
    rows = ["", f"Pool: {pool.queries} judged queries of "
                f"{', '.join(md_cell(x) for x in pool.splits)}; {pool.selected} "
                f"selected. The pool's own ceiling (every pool query added): MSC "
                f"{c.msc:.3f}, SCC {c.scc:.3f}."]
    empty = [u for u in report.unfilled or () if u.pool_queries_left == 0]
    if empty:
        rows += ["", "Strata the pool cannot fill (short of n_min, no pool query left):", "",
                 "| cluster | mass | queries | label |", "|---|---|---|---|"]
        rows += [f"| {u.cluster} | {u.mass:.3f} | {u.queries} | "
                 f"{md_cell(u.label or '')} |" for u in empty[:20]]
    return rows


def _targets(report: CoverageReport) -> list[str]:
    """The targets' lines (none without targets)."""
    t = report.targets
    if not t:
        return []
    return ["", f"Targets: MSC ≥ {t.msc:.3f} (ceiling {t.ceiling_msc:.3f}: every "
                f"document a query; {t.msc / t.ceiling_msc:.0%} of it) and SCC ≥ "
                f"{t.scc:.3f} (every document a query: {t.ceiling_scc_documents:.3f})."
            if t.ceiling_msc > 0 else ""]


def gate_markdown(gate: "Mapping | ValidityGate") -> list[str]:
    """``coverage.md``'s lines for the validity gate (``gate``: the ``gate`` of
    ``coverage.json``, :func:`mteb_stratified.generation.gate.validity_gate`, or its
    :class:`~mteb_stratified.io.coverage_report.ValidityGate`)."""
    md = md_cell
    gate = gate if isinstance(gate, ValidityGate) else ValidityGate.from_dict(gate)
    rows = ["", "## Validity gate", "", f"**Verdict: {gate.verdict}**", ""]
    j = gate.judge
    if j.measured:
        def f(x):
            return "–" if x is None else f"{x:.2f}"
        rows.append(f"- judge against the human qrels ({j.pairs} real pairs: BM25 top "
                    f"{j.per_query} of {j.queries} queries, unjudged = non-relevant): "
                    f"precision {f(j.precision)}, recall {f(j.recall)}, "
                    f"Cohen's κ {f(j.kappa)}"
                    + (f" ({j.stopped})" if j.stopped else ""))
    else:
        rows.append(f"- judge: not measured ({j.why})")
    so = gate.system_order
    if so:
        tau = so.kendall_tau
        rows.append(f"- system order ({', '.join(md(s) for s in so.systems)}; "
                    f"{so.measure}): Kendall τ = "
                    f"{'–' if tau is None else f'{tau:.2f}'} between the original and the "
                    "added queries")
        for p in so.pairs:
            r, a, st = p.real, p.added, p.strata
            rows.append(f"  - {md(p.a)} − {md(p.b)}: {r.difference:+.3f} on the "
                        f"original (p = {_p(r.p_value)}), {a.difference:+.3f} on the added "
                        f"(p = {_p(a.p_value)}); same sign in {st.same_sign} of "
                        f"{st.shared_clusters} shared clusters")
    lb = gate.lexical_bias
    if lb.added:
        rows.append(f"- lexical bias: BM25's rank 1 is relevant for "
                    f"{lb.added.rank1_relevant:.0%} of the added queries and "
                    f"{lb.original.rank1_relevant:.0%} of the original ones")
    b = gate.trivial_baseline
    rows.append(f"- trivial baseline ({b.documents} documents, one per targeted "
                f"cluster): MSC {b.msc:.3f}, SCC {b.scc:.3f} (the targeting alone: the "
                "coverage gain does not vouch for the queries)")
    if gate.pool_bias:
        rows.append(f"- pool bias: {gate.pool_bias}")
    return rows


def _p(p) -> str:
    return "–" if p is None else f"{p:.3g}"
