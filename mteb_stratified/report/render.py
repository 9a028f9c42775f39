"""Self-contained HTML report and Markdown summary of stratified results of ≥ 1 systems.

The HTML inlines every plot as SVG drawn with matplotlib's SVG backend (no network assets, no
JavaScript) and reads top to bottom as a practitioner would ask:

1. a setup table (queries, clusters, the corpus' fixed Δ/J cut-points, settings);
2. **what this says**, in plain words, the paired question first: where one system beats
   another beyond chance (per-stratum sign-flip tests, and whether the gap varies across strata
   more than across random strata of the same sizes), with the smallest gap these queries
   could have seen; then coverage gaps, whether each system's strata differ beyond chance,
   whether J adds to lexical overlap, and whether the ranking is stable;
3. a glossary (MSC, SCC, Δ, J, pooled, macro, corpus-weighted, expected, range, bias);
4. coverage (table, coverage map, gaps), estimates, the heterogeneity test, per-stratum scores
   with intervals bounded to the metric's range, Δ×J heatmaps, decision stability and ties.

Evaluated strata are named by their unit of the cluster tree and its label
(``L5.0 (rest) · cancer / cardiovascular disease``; a fine cluster ``c12 · cancer / tumor``:
:func:`.prose.evaluated_name`).  Every string that comes from the user or the data (system
names, titles, labels) is escaped in HTML and drawn as plain text (no mathtext) in the plots
(:mod:`.figures`).

The page and the summary are rendered here from the report's model (:mod:`.model`), its
words (:mod:`.prose`) and its figures (:mod:`.figures`); both are written as one pair
(:func:`write_report_pair`).
"""

from __future__ import annotations

import html as _html
import re

from ..core.options import ALPHA
from ..core.ranking.per_query import TIE_AWARE_KEYS
from ..io.markdown import md_cell
from ..stratification.summary import INTERVAL_RULE
from .figures import coverage_map, heatmaps, per_stratum_plot, tie_panel
from .model import ReportModel, pairs_note, pairs_of, same_set, set_groups, stabilities
from .prose import (EST_LABELS, GLOSSARY, evaluated_name, fmt, headline, mde_cell,
                    pair_paragraph, pct, same_set_note, split_half_cell, what_this_says)

__all__ = ["render_html", "to_markdown", "write_html", "write_report_pair",
           "report_pair_problem", "variation_rows", "VARIATION_HEAD"]


def _esc(x) -> str:
    return _html.escape(str(x), quote=True)


def _table(head, rows, *, row_headers: bool = False) -> str:
    h = ("<thead><tr>" + "".join(f"<th>{_esc(c)}</th>" for c in head) + "</tr></thead>"
         if head else "")

    def cells(r):
        return "".join(f"<th>{_esc(c)}</th>" if row_headers and i == 0 else f"<td>{_esc(c)}</td>"
                       for i, c in enumerate(r))
    body = "".join(f"<tr>{cells(r)}</tr>" for r in rows)
    return f"<table>{h}<tbody>{body}</tbody></table>"


def _estimates_rows(report, names=None):
    rows = []
    for name in names or report.systems:
        b = report.systems[name]
        for est, a in b.estimators("expected", "analytic").items():
            bs = b.estimate(est, method="bootstrap")
            rows.append([name, EST_LABELS.get(est, est), fmt(a.estimate),
                         f"[{fmt(a.ci_low)}, {fmt(a.ci_high)}]",
                         f"[{fmt(bs.ci_low)}, {fmt(bs.ci_high)}]"])
    return rows


def _stability_rows(st):
    rows = []
    for agg, w in st.winners.items():
        rows.append([EST_LABELS.get(agg, agg), w, "yes" if st.winner_significant[agg] else "no",
                     ", ".join(f"{s}={v:.4f}" for s, v in st.scores[agg].items())])
    return rows


def _cuts(cuts, levels) -> str:
    """``Low ≤ a < Med ≤ b < High`` for any number of cut-points (then ``; N/A`` when the
    grid has that level)."""
    parts = [levels[0]]
    for cut, level in zip(cuts, levels[1:]):
        parts.append(f"≤ {cut:.4g} < {level}")
    text = " ".join(parts)
    if len(levels) == len(cuts) + 2:
        text += f"; {levels[-1]}: not applicable"
    return text


def _grain_text(summary) -> str:
    g = summary.grain
    if not g:
        return "–"
    return (f"{g.n_strata} (scheme: {summary.scheme}; --min-queries {g.min_queries}, "
            f"tree levels {', '.join(str(x) for x in g.levels)})")


def _pair_rows(pair) -> list:
    """One row per evaluated stratum of a pair: n, a − b [CI], winner, deviation p."""
    dev = {r.stratum: r for r in pair.heterogeneity.strata}
    rows = []
    for r in pair.stratum_differences.strata:
        h = dev.get(r.stratum)
        rows.append([evaluated_name(r, 40), r.n, fmt(r.mean_difference, signed=True),
                     f"[{fmt(r.ci_low, signed=True)}, {fmt(r.ci_high, signed=True)}]",
                     f"{r.p_adjusted:.3f}", r.winner or "neither",
                     f"{h.p_adjusted:.3f}" if h is not None else "–"])
    return rows


def variation_rows(pair, grain: str = "topics") -> list:
    """One row per group of the pair's random-effects fit, largest first: the group, n, the
    raw mean gap, the shrunken gap and its 95% interval."""
    v = pair.variation.get(grain)
    if v is None or not v.estimable or v.degenerate:
        return []
    rows = sorted(v.groups, key=lambda g: (-g.n, g.group))
    return [[evaluated_name(g, 40), g.n, fmt(g.mean, signed=True),
             fmt(g.shrunken, signed=True),
             f"[{fmt(g.ci_low, signed=True)}, {fmt(g.ci_high, signed=True)}]"]
            for g in rows]


VARIATION_HEAD = ["topic", "n", "a − b (raw)", "a − b (shrunken)", "95% interval"]


def _pairs_html(report) -> list:
    pairs = pairs_of(report)
    if not pairs:
        return [f"<p>{_esc(pairs_note(report) or 'Needs ≥ 2 systems.')}</p>"]
    parts = []
    for pair in pairs:
        parts.append(f"<h3>{_esc(pair.a)} − {_esc(pair.b)}</h3>")
        parts.append(f"<p>{_esc(pair_paragraph(pair, report.systems[pair.a].measure))}"
                     "</p>")
        if pair.tested:
            parts.append(_table(["stratum", "n", "a − b", "95% CI (t)",
                                 "p, a − b ≠ 0 (sign flips, WY)", "winner",
                                 "p, gap apart from the rest (WY)"], _pair_rows(pair)))
        rows = variation_rows(pair)
        if rows:
            parts.append("<details><summary>The gap per topic, shrunken toward the mean "
                         "(REML random intercept)</summary>"
                         + _table(VARIATION_HEAD, rows) + "</details>")
    return parts


def _setup_rows(report):
    first = next(iter(report.systems.values()))
    bins = first.bins
    counts = first.bin_counts

    def per_bin(c):
        return "" if not c else " (queries per bin: " + " / ".join(str(x) for x in c) + ")"

    return [
        ["systems", ", ".join(report.systems)],
        ["measure", first.measure],
        ["queries stratified", f"{first.n_queries} ({first.n_excluded} excluded: no "
                               "relevant document or no cluster mass)"],
        ["leaves", f"{first.cluster_coverage.n_units} leaves, the finest clusters (coverage "
                   "and gaps)"],
        ["evaluated strata", _grain_text(first)],
        ["Δ cut-points", _cuts(bins.dispersion, first.levels) + per_bin(counts.dispersion)],
        ["J cut-points", _cuts(bins.alignment, first.alignment_levels)
         + per_bin(counts.alignment)],
        ["cut-points from", bins.source],
        ["n_min (SCC)", first.n_min],
        ["intervals", f"{int(100 * first.confidence_level)}% Student t (Satterthwaite df) and "
                      f"Rao–Wu bootstrap ({first.n_resamples} resamples, seed {first.seed}); "
                      f"{INTERVAL_RULE}"],
    ]


_CSS = ("body{font-family:system-ui,sans-serif;max-width:1300px;margin:auto;padding:0 16px;"
        "line-height:1.4}table{border-collapse:collapse;font-size:13px;margin:6px 0}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
        "th{background:#f4f4f4}figure{margin:10px 0}figure svg{max-width:100%;height:auto}"
        ".says{background:#f6f9ff;border-left:4px solid #1f77b4;padding:6px 14px}"
        "dl{display:grid;grid-template-columns:max-content auto;gap:4px 14px;font-size:13px}"
        "dt{font-weight:bold}dd{margin:0}"
        ".headline{font-size:17px;font-weight:600;margin:8px 0}#key-points li{margin:2px 0}")


def render_html(report: ReportModel) -> str:
    """The report as one self-contained HTML string."""
    title = _esc(report.title)
    first_name, first = next(iter(report.systems.items()))
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>",
             f"<style>{_CSS}</style></head><body>", f"<h1>{title}</h1>"]
    head, points = headline(report)
    parts.append(f"<p id='headline' class='headline'>{_esc(head)}</p>")
    parts.append("<ul id='key-points'>" + "".join(f"<li>{_esc(p)}</li>" for p in points)
                 + "</ul>")
    parts.append("<h2 id='ties-section'>Ties: range and bias</h2>")
    parts.extend(_ties_html(report))
    parts.append("<h2 id='what-this-says'>What this says</h2><div class='says'>"
                 + "".join(f"<p>{_esc(p)}</p>" for p in what_this_says(report)) + "</div>")
    parts.append("<h2 id='setup'>Setup</h2>")
    parts.append(_table(None, _setup_rows(report), row_headers=True))
    for w in first.warnings:
        parts.append(f"<p><b>Warning:</b> {_esc(w)}</p>")
    parts.append("<h2 id='glossary'>Glossary</h2><dl>"
                 + "".join(f"<dt>{_esc(t)}</dt><dd>{_esc(d)}</dd>" for t, d in GLOSSARY)
                 + "</dl>")
    parts.append("<h2 id='pairs'>Where does one system beat another?</h2>")
    parts.extend(_pairs_html(report))
    parts.append("<h2 id='coverage'>Coverage</h2>")
    parts.append(_table(["level", "MSC", "SCC", "n_min", "covered", "units", "uncovered mass"],
                        [[c.level, fmt(c.msc), fmt(c.scc), c.n_min, c.covered,
                          c.weighted_units, fmt(c.uncovered_mass)]
                         for c in first.coverage.values()]))
    parts.append(f"<figure id='coverage-map'>{coverage_map(first)}</figure>")
    parts.append("<h3>Gaps: clusters without queries, heaviest first</h3>")
    parts.append(_table(["cluster", "corpus mass", "label"],
                        [[g.stratum, fmt(g.mass), g.label] for g in first.gaps[:15]]))
    parts.append("<h2 id='estimates'>Estimates (expected)</h2>")
    parts.extend(_estimates_html(report))
    parts.append("<h2 id='chance'>Do the strata differ beyond chance?</h2>")
    parts.append("<p>η² is the share of the per-query variance the strata explain; the null "
                 "column is what random strata of the same sizes explain (the same queries, "
                 "labels shuffled).</p>")
    systems = report.systems
    for label, names in set_groups(report):
        if label:
            parts.append(f"<h3>{_esc(label)}</h3>")
        parts.append(_table(["system", "η² (strata)", "η² (random strata, mean)",
                             "η² (random, 95%)", "permutation p", "split-half r (random)",
                             "strata apart (Westfall–Young)", "MDE (20% / 10%)"],
                            [[n, pct(h.eta_squared), pct(h.null_eta_squared),
                              pct(h.null_eta_squared_95), f"{h.pvalue:.3f}",
                              split_half_cell(systems[n].split_half),
                              "; ".join(evaluated_name(s, 30)
                                        for s in h.differing_strata(ALPHA)) or "none",
                              mde_cell(systems[n].power)]
                             for n in names if (h := systems[n].heterogeneity) is not None]))
    parts.append("<h2 id='strata'>Per-stratum scores</h2>")
    if report.query_sets:
        parts.append(f"<p>{_esc(same_set_note(report))}</p>")
    parts.append(f"<figure id='per-stratum'>{per_stratum_plot(report)}</figure>")
    parts.append(f"<h2 id='cells'>Δ×J heatmaps (large clusters, {_esc(first_name)})</h2>")
    parts.append(f"<figure id='heatmaps'>{heatmaps(first)}</figure>")
    parts.append("<h2 id='stability'>Decision stability</h2>")
    for label, st in stabilities(report):
        if label:
            parts.append(f"<h3>{_esc(label)}</h3>")
        parts.append(_table(["aggregation", "winner", "significant", "scores"],
                            _stability_rows(st)))
        flips = st.flips
        sig_flips = st.significant_flips
        parts.append("<p>Flips between aggregations (counted only when one of the "
                     "disagreeing orders is significant): " + (_esc("; ".join(
                         f"{f.a} vs {f.b} (" + ", ".join(
                             f"{EST_LABELS.get(a, a)}: {w}" for a, w in f.ahead.items())
                         + ")" for f in sig_flips)) if sig_flips else "none")
                     + (f" ({len(flips) - len(sig_flips)} more without significance)"
                        if len(flips) > len(sig_flips) else "") + ".</p>")
    if stabilities(report):
        for pair in pairs_of(report):
            f = pair.flips
            if f is None:
                continue
            parts.append(
                f"<p>Per stratum, {_esc(pair.a)} vs {_esc(pair.b)}: {f.flips} of "
                f"{f.tested} strata reverse the overall order "
                f"(random strata of the same sizes: {f.null_flip_rate * f.tested:.1f}); "
                f"{f.significant_flips} significantly (paired t, Holm; random: "
                f"{f.null_significant_rate * f.tested:.2f}); flip strength permutation "
                f"p = {f.p_value:.3f}.</p>")
    else:
        parts.append("<p>Needs ≥ 2 systems.</p>")
    parts.append("</body></html>")
    out = "\n".join(parts)
    return re.sub(r"<!--.*?-->", "", out, flags=re.S)


def _estimates_html(report) -> list:
    """The estimates table and each system's bounds, one table per query set."""
    parts = []
    for label, names in set_groups(report):
        if label:
            parts.append(f"<h3>{_esc(label)}</h3>")
        parts.append(_table(["system", "estimator", "estimate", "95% CI (t)",
                             "95% CI (Rao–Wu bootstrap)"], _estimates_rows(report, names)))
        for name in names:
            b = report.systems[name]
            if b.bounds:
                bd = b.bounds
                parts.append(f"<p>{_esc(name)}: uncovered corpus weight "
                             f"{b.uncovered_weight:.3f}; corpus-weighted bounds (metric 0 / 1 "
                             f"on uncovered clusters) [{bd.low:.4f}, {bd.high:.4f}]</p>")
    return parts


def _tie_rows(report, names) -> list:
    systems = report.systems
    return [[n] + [fmt(systems[n].estimate("pooled", value=k).estimate, signed=k == "bias")
                   if k in systems[n].estimates else "–"
                   for k in TIE_AWARE_KEYS] for n in names]


def _ties_html(report) -> list:
    """The ties plot and table, one of each per query set (a set named above its own)."""
    parts = []
    for k, (label, names) in enumerate(set_groups(report)):
        if label:
            parts.append(f"<h3>{_esc(label)}</h3>")
        fid = "ties" if k == 0 else f"ties-{k + 1}"
        parts.append(f"<figure id='{fid}'>{tie_panel(report, names, label)}</figure>")
        parts.append(_table(["system", *TIE_AWARE_KEYS], _tie_rows(report, names)))
    return parts


def write_html(report: ReportModel, path) -> str:
    """Render the report and write it to ``path`` atomically (no half-written file)."""
    from ..io.outputs import atomic_write

    text = render_html(report)
    with atomic_write(path, encoding="utf-8") as fh:
        fh.write(text)
    return str(path)


_STAMP = re.compile(r"<!-- mteb-stratified report pair ([0-9a-f]{20}) -->\n\Z")


def _stamped(html_text: str, md_text: str) -> tuple[bytes, bytes]:
    """The HTML and Markdown of one report, each ending with the same stamp (a hash of both),
    so a reader can tell whether the two files next to each other come from one run."""
    import hashlib

    stamp = hashlib.sha256(html_text.encode("utf-8") + b"\0"
                           + md_text.encode("utf-8")).hexdigest()[:20]
    line = f"<!-- mteb-stratified report pair {stamp} -->\n"
    return ((html_text.rstrip("\n") + "\n" + line).encode("utf-8"),
            (md_text.rstrip("\n") + "\n\n" + line).encode("utf-8"))


def write_report_pair(report: ReportModel, html_path, md_path) -> tuple[str, str]:
    """Write the report's HTML and its Markdown summary as one unit
    (:func:`~mteb_stratified.io.outputs.write_together`): both are rendered and written to
    temp files first, the old pair is removed, then both are renamed in; each ends with a
    shared stamp (:func:`report_pair_problem` checks it).  A kill leaves the old pair, or one
    file of the new pair and none of the old: never an HTML beside another run's summary."""
    from ..io.outputs import write_together

    html_bytes, md_bytes = _stamped(render_html(report), to_markdown(report))
    write_together([(html_path, html_bytes), (md_path, md_bytes)])
    return str(html_path), str(md_path)


def report_pair_problem(html_path, md_path) -> str | None:
    """None when the HTML and Markdown files are one run's pair (the same stamp); else what
    is wrong, in words (one missing, unstamped or from another run)."""
    stamps = []
    for path in (html_path, md_path):
        try:
            with open(path, "rb") as fh:
                fh.seek(0, 2)
                fh.seek(max(0, fh.tell() - 200))
                tail = fh.read().decode("utf-8", "replace")
        except OSError as exc:
            return f"{path} cannot be read ({exc.strerror})"
        found = _STAMP.search(tail)
        if found is None:
            return f"{path} has no report-pair stamp"
        stamps.append(found.group(1))
    if stamps[0] != stamps[1]:
        return (f"{html_path} and {md_path} come from different runs (stamps {stamps[0]} and "
                f"{stamps[1]})")
    return None


def _pair_markdown(pair) -> list:
    """A pair's Markdown tables: per evaluated stratum (when tested), then per topic shrunken
    toward the mean (when the random-effects fit was made)."""
    lines = []
    if pair.tested:
        lines += [f"{md_cell(pair.a)} − {md_cell(pair.b)} per evaluated stratum:", "",
                  "| stratum | n | a − b | 95% CI | p (a − b ≠ 0) | winner | p (gap apart) |",
                  "|---|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(md_cell(x) for x in row) + " |" for row in _pair_rows(pair)]
        lines.append("")
    rows = variation_rows(pair)
    if rows:
        lines += [f"{md_cell(pair.a)} − {md_cell(pair.b)} per topic, shrunken toward "
                  "the mean (REML random intercept):", "",
                  "| " + " | ".join(VARIATION_HEAD) + " |", "|" + "---|" * len(VARIATION_HEAD)]
        lines += ["| " + " | ".join(md_cell(x) for x in row) + " |" for row in rows]
        lines.append("")
    return lines


def to_markdown(report: ReportModel) -> str:
    """A Markdown summary: what this says, coverage, gaps, estimates, spread, stability."""
    first = next(iter(report.systems.values()))
    measure = md_cell(first.measure)
    head, points = headline(report)
    lines = [f"# {md_cell(report.title)}", "", f"**{md_cell(head)}**", ""]
    lines += [f"- {md_cell(p)}" for p in points] + [""]
    lines.append(f"{first.n_queries} stratified queries ({first.n_excluded} excluded), "
                 f"{first.n_clusters} clusters, scheme {md_cell(first.scheme)}.")
    counts = first.bin_counts
    for per_bin, name, levels in ((counts.dispersion, "Δ", first.levels),
                                  (counts.alignment, "J", first.alignment_levels)):
        if per_bin:
            lines += ["", f"Queries per {name} bin: " + ", ".join(
                f"{lev} {n}" for lev, n in zip(levels, per_bin)) + "."]
    for w in first.warnings:
        lines += ["", f"**Warning:** {md_cell(w)}."]
    lines += ["", "## What this says", ""]
    for p in what_this_says(report):
        lines += [md_cell(p), ""]
    for pair in pairs_of(report):
        lines += _pair_markdown(pair)
    lines.append("| level | MSC | SCC | n_min | covered / units | uncovered mass |")
    lines.append("|---|---|---|---|---|---|")
    for c in first.coverage.values():
        lines.append(f"| {c.level} | {c.msc:.3f} | {c.scc:.3f} | {c.n_min} | "
                     f"{c.covered} / {c.weighted_units} | {c.uncovered_mass:.3f} |")
    lines += ["", "Zero-query clusters with the largest corpus mass:", "",
              "| cluster | corpus mass | label |", "|---|---|---|"]
    for g in first.gaps[:10]:
        lines.append(f"| {g.stratum} | {g.mass:.4f} | {md_cell(g.label)} |")
    groups = set_groups(report)
    for label, names in groups:
        lines += ["", f"Estimates of {measure} (expected), 95% CIs"
                  + (f", {md_cell(label)}" if label else "") + ":", "",
                  "| system | estimator | estimate | t CI | Rao–Wu bootstrap CI |",
                  "|---|---|---|---|---|"]
        for r in _estimates_rows(report, names):
            lines.append("| " + " | ".join(md_cell(x) for x in r) + " |")
    for label, names in groups:
        lines += ["", f"Ties of {measure}, pooled" + (f", {md_cell(label)}" if label else "")
                  + ":", "", "| " + " | ".join(("system", *TIE_AWARE_KEYS)) + " |",
                  "|" + "---|" * (1 + len(TIE_AWARE_KEYS))]
        lines += ["| " + " | ".join(md_cell(x) for x in r) + " |"
                  for r in _tie_rows(report, names)]
    lines += ["", "| system | uncovered weight | bounds (metric 0/1 there) | spread (all strata) "
              "| best − worst (n ≥ n_min) |", "|---|---|---|---|---|"]
    for name, b in report.systems.items():
        bd = b.bounds
        sp = b.spread_min_n
        spt = (f"{sp.spread:.4f}: best {md_cell(evaluated_name(sp.best, 30))} "
               f"({sp.best.expected:.3f}, n={sp.best.n}), worst "
               f"{md_cell(evaluated_name(sp.worst, 30))} ({sp.worst.expected:.3f}, "
               f"n={sp.worst.n})"
               if sp else "–")
        low, high = (bd.low, bd.high) if bd is not None else (None, None)
        lines.append(f"| {md_cell(name)} | {b.uncovered_weight:.3f} | [{fmt(low)}, "
                     f"{fmt(high)}] | {fmt(b.spread)} | {spt} |")
    n_min = first.n_min
    names = same_set(report)
    if report.query_sets:
        lines += ["", md_cell(same_set_note(report))]
    lines += ["", f"Per-stratum {measure} (strata with ≥ {n_min} queries), 95% t CI:",
              "",
              "| stratum | n | corpus mass | " + " | ".join(md_cell(n) for n in names) + " |",
              "|---|---|---|" + "---|" * len(names)]
    by = {n: {r.key: r for r in report.systems[n].per_stratum} for n in names}
    for r in first.per_stratum:
        if r.n < n_min:
            continue
        cells = []
        for n in names:
            x = by[n].get(r.key)
            cells.append(f"{x.expected:.3f} [{fmt(x.ci_low, 3)}, {fmt(x.ci_high, 3)}]"
                         if x else "–")
        lines.append(f"| {md_cell(evaluated_name(r, 60))} | {r.n} | "
                     f"{fmt(r.corpus_mass)} | " + " | ".join(cells) + " |")
    for label, st in stabilities(report):
        lines += ["", "Decision stability" + (f" ({md_cell(label)})" if label else "") + ":",
                  "", "| aggregation | winner | significant | scores |", "|---|---|---|---|"]
        for r in _stability_rows(st):
            lines.append("| " + " | ".join(md_cell(x) for x in r) + " |")
        lines.append("")
        lines.append("Order flips: " + ("; ".join(
            f"{md_cell(f.a)} vs {md_cell(f.b)} (" + ", ".join(
                f"{EST_LABELS.get(a, a)}: {md_cell(w)}" for a, w in f.ahead.items()) + ")"
            for f in st.flips) or "none") + ".")
    lines += ["", "## Glossary", ""]
    lines += [f"- **{md_cell(t)}**: {md_cell(d)}" for t, d in GLOSSARY]
    return "\n".join(lines) + "\n"
