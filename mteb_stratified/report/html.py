"""Self-contained HTML report and Markdown summary of stratified results of ≥ 1 systems.

The HTML inlines every plot as SVG drawn with matplotlib's SVG backend (no network
assets, no JavaScript): a coverage map (cluster corpus mass against query count), a Δ×J heatmap
per large cluster, per-stratum scores with CIs, a decision-stability table (≥ 2 systems) and a
tie range/bias panel.
"""

from __future__ import annotations

import html as _html
import io
import re

__all__ = ["build_report", "write_html", "to_markdown", "render_html"]


def build_report(summaries: dict, stability: dict | None = None, *,
                 title: str | None = None) -> dict:
    """Bundle per-system ``strata`` blocks (``{system: block}``) and the stability summary."""
    first = next(iter(summaries.values()))
    return {"title": title or f"Stratified evaluation ({first['measure']})",
            "systems": summaries, "stability": stability}


def _fmt(x, nd=4) -> str:
    return "–" if x is None else f"{x:.{nd}f}"


def _svg(fig) -> str:
    import matplotlib.pyplot as plt
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _plt():
    try:
        import matplotlib
    except ImportError:
        raise ImportError("the HTML report draws its plots with matplotlib: "
                          "pip install 'mteb-stratified[plots]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams["svg.fonttype"] = "none"
    return plt


def _coverage_map(block) -> str:
    plt = _plt()
    cl = block["clusters"]
    n_min = block["settings"]["n_min"]
    fig, ax = plt.subplots(figsize=(6.5, 4))
    x = [c["mass"] for c in cl]
    y = [c["n_queries"] for c in cl]
    col = ["#d62728" if n == 0 else ("#ff7f0e" if n < n_min else "#1f77b4") for n in y]
    ax.scatter(x, y, c=col, s=18)
    gaps = sorted((c for c in cl if c["n_queries"] == 0), key=lambda c: -c["mass"])[:5]
    for g in gaps:
        ax.annotate(str(g["cluster"]), (g["mass"], 0), fontsize=7, xytext=(2, 4),
                    textcoords="offset points")
    ax.axhline(n_min - 0.5, color="grey", lw=0.6, ls="--")
    ax.set_xlabel("cluster corpus mass")
    ax.set_ylabel("queries (primary cluster)")
    cov = block["coverage"]["cluster"]
    ax.set_title(f"Coverage map: MSC {cov['msc']:.3f}, SCC(n_min={n_min}) {cov['scc']:.3f}; "
                 "red = no query", fontsize=9)
    return _svg(fig)


def _heatmaps(block, max_clusters=6) -> str:
    plt = _plt()
    cells = [c for c in block["cells"] if c["n_queries"] >= block["settings"]["n_min"]]
    cells = cells[:max_clusters]
    if not cells:
        return "<p>No cluster holds enough queries for a Δ×J heatmap.</p>"
    import numpy as np
    levels = block["levels"]
    ncols = min(3, len(cells))
    nrows = -(-len(cells) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(2.6 * ncols, 2.6 * nrows), squeeze=False)
    for ax in axes.ravel()[len(cells):]:
        ax.set_axis_off()
    for ax, c in zip(axes.ravel(), cells):
        m = np.array([[np.nan if v is None else v for v in row] for row in c["mean"]])
        ax.imshow(m, vmin=0, vmax=1, cmap="viridis", origin="lower")
        for i in range(3):
            for j in range(3):
                n = c["counts"][i][j]
                if n:
                    ax.text(j, i, f"{m[i, j]:.2f}\nn={n}", ha="center", va="center",
                            fontsize=6, color="white" if m[i, j] < 0.6 else "black")
        ax.set_xticks(range(3), levels, fontsize=6)
        ax.set_yticks(range(3), levels, fontsize=6)
        ax.set_xlabel("alignment J", fontsize=7)
        ax.set_ylabel("dispersion Δ", fontsize=7)
        ax.set_title(f"cluster {c['cluster']} (n={c['n_queries']})", fontsize=7)
    return _svg(fig)


def _per_stratum_plot(report) -> str:
    plt = _plt()
    systems = report["systems"]
    first = next(iter(systems.values()))
    n_min = first["settings"]["n_min"]
    strata = [r["stratum"] for r in first["per_stratum"] if r["n"] >= n_min][:25]
    if not strata:
        return "<p>No stratum holds enough queries.</p>"
    fig, ax = plt.subplots(figsize=(7, 0.28 * len(strata) + 1.2))
    k = len(systems)
    for s_i, (name, block) in enumerate(systems.items()):
        by = {str(r["stratum"]): r for r in block["per_stratum"]}
        ys, xs, lo, hi = [], [], [], []
        for i, st in enumerate(strata):
            r = by.get(str(st))
            if r is None or r["ci_low"] is None:
                continue
            ys.append(i + (s_i - (k - 1) / 2) * 0.25)
            xs.append(r["expected"])
            lo.append(r["expected"] - r["ci_low"])
            hi.append(r["ci_high"] - r["expected"])
        ax.errorbar(xs, ys, xerr=[lo, hi], fmt="o", ms=3, capsize=2, label=name)
    ax.set_yticks(range(len(strata)), [str(s) for s in strata], fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel(f"{first['measure']} (expected), 95% t CI")
    ax.set_ylabel("stratum (cluster)")
    ax.legend(fontsize=7)
    ax.set_title(f"Per-stratum scores (strata with ≥ {n_min} queries)", fontsize=9)
    return _svg(fig)


def _tie_panel(report) -> str:
    plt = _plt()
    systems = report["systems"]
    fig, axes = plt.subplots(1, 2, figsize=(7, 2.6))
    names = list(systems)
    for ax, est in zip(axes, ("pooled", "post_stratified")):
        for i, name in enumerate(names):
            e = systems[name]["estimates"]
            ex = e["expected"]["analytic"].get(est)
            if ex is None:
                continue
            lo = e["min"]["analytic"][est]["estimate"] if "min" in e else ex["estimate"]
            hi = e["max"]["analytic"][est]["estimate"] if "max" in e else ex["estimate"]
            ax.plot([lo, hi], [i, i], lw=6, alpha=0.4, color="C%d" % i)
            ax.plot([ex["estimate"]], [i], "o", color="C%d" % i)
            if "oblivious" in e:
                ax.plot([e["oblivious"]["analytic"][est]["estimate"]], [i], "x", color="k")
        ax.set_yticks(range(len(names)), names, fontsize=7)
        ax.set_title(f"{est}: tie range [min, max], ● expected, × oblivious", fontsize=7)
    return _svg(fig)


def _table(head, rows) -> str:
    h = "".join(f"<th>{_html.escape(str(c))}</th>" for c in head)
    body = "".join("<tr>" + "".join(f"<td>{_html.escape(str(c))}</td>" for c in r) + "</tr>"
                   for r in rows)
    return f"<table><thead><tr>{h}</tr></thead><tbody>{body}</tbody></table>"


def _estimates_rows(report):
    rows = []
    for name, b in report["systems"].items():
        for est, a in b["estimates"]["expected"]["analytic"].items():
            bs = b["estimates"]["expected"]["bootstrap"][est]
            rows.append([name, est, _fmt(a["estimate"]),
                         f"[{_fmt(a['ci_low'])}, {_fmt(a['ci_high'])}]",
                         f"[{_fmt(bs['ci_low'])}, {_fmt(bs['ci_high'])}]"])
    return rows


def _stability_rows(st):
    rows = []
    for agg, w in st["winners"].items():
        rows.append([agg, w, "yes" if st["winner_significant"][agg] else "no",
                     ", ".join(f"{s}={v:.4f}" for s, v in st["scores"][agg].items())])
    return rows


def render_html(report: dict) -> str:
    """The report as one self-contained HTML string."""
    title = _html.escape(report["title"])
    first_name, first = next(iter(report["systems"].items()))
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title>",
             "<style>body{font-family:sans-serif;max-width:1000px;margin:auto}"
             "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;"
             "padding:2px 6px}figure{margin:8px 0}</style></head><body>",
             f"<h1>{title}</h1>"]
    cov = first["coverage"]["cluster"]
    parts.append(f"<p>{first['n_queries']} stratified queries, {first['n_excluded']} excluded "
                 f"(no relevant document or no cluster mass), {cov['units']} clusters; "
                 f"bins: {_html.escape(str(first['bins']))}.</p>")
    parts.append(f"<p>Queries per bin (Low/Med/High): "
                 f"{_html.escape(str(first.get('bin_counts')))}</p>")
    for w in first.get("warnings", ()):
        parts.append(f"<p><b>Warning:</b> {_html.escape(w)}</p>")
    parts.append("<h2>Coverage</h2>")
    parts.append(_table(["level", "MSC", "SCC", "n_min", "covered", "units", "uncovered mass"],
                        [[c["level"], _fmt(c["msc"]), _fmt(c["scc"]), c["n_min"], c["covered"],
                          c["units"], _fmt(c["uncovered_mass"])]
                         for c in first["coverage"].values()]))
    parts.append(f"<figure id='coverage-map'>{_coverage_map(first)}</figure>")
    parts.append("<h3>Gaps: clusters without queries, heaviest first</h3>")
    parts.append(_table(["cluster", "corpus mass", "label"],
                        [[g["stratum"], _fmt(g["mass"]), g["label"]] for g in first["gaps"][:15]]))
    parts.append("<h2>Estimates (expected)</h2>")
    parts.append(_table(["system", "estimator", "estimate", "95% CI (t)",
                         "95% CI (Rao–Wu bootstrap)"], _estimates_rows(report)))
    for name, b in report["systems"].items():
        if b.get("bounds"):
            bd = b["bounds"]
            parts.append(f"<p>{_html.escape(name)}: uncovered corpus weight "
                         f"{b['uncovered_weight']:.3f}; μ bounds (metric 0/1 on uncovered "
                         f"clusters) [{bd['low']:.4f}, {bd['high']:.4f}]</p>")
    parts.append("<h2>Per-stratum scores</h2>")
    parts.append(f"<figure id='per-stratum'>{_per_stratum_plot(report)}</figure>")
    parts.append(f"<h2>Δ×J heatmaps (large clusters, {_html.escape(first_name)})</h2>")
    parts.append(f"<figure id='heatmaps'>{_heatmaps(first)}</figure>")
    parts.append("<h2>Decision stability</h2>")
    st = report.get("stability")
    if st:
        parts.append(_table(["aggregation", "winner", "significant", "scores"],
                            _stability_rows(st)))
        flips = st["flips"]
        parts.append("<p>Flips: " + (", ".join(
            f"{f['a']} vs {f['b']} ({_html.escape(str(f['ahead']))})" for f in flips)
            if flips else "none") + "</p>")
    else:
        parts.append("<p>Needs ≥ 2 systems.</p>")
    parts.append("<h2>Ties: range and bias</h2>")
    parts.append(f"<figure id='ties'>{_tie_panel(report)}</figure>")
    parts.append(_table(["system", "expected", "min", "max", "oblivious", "bias"],
                        [[n] + [_fmt(b["estimates"][k]["analytic"]["pooled"]["estimate"])
                                if k in b["estimates"] else "–"
                                for k in ("expected", "min", "max", "oblivious", "bias")]
                         for n, b in report["systems"].items()]))
    parts.append("</body></html>")
    out = "\n".join(parts)
    return re.sub(r"<!--.*?-->", "", out, flags=re.S)


def write_html(report: dict, path) -> str:
    text = render_html(report)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    return str(path)


def to_markdown(report: dict) -> str:
    """A Markdown summary: coverage, gaps, estimates, spread, stability."""
    first = next(iter(report["systems"].values()))
    lines = [f"# {report['title']}", ""]
    lines.append(f"{first['n_queries']} stratified queries ({first['n_excluded']} excluded), "
                 f"{first['structure']['n_clusters']} clusters, scheme `{first['scheme']}`.")
    lines += ["", f"Queries per bin (Low/Med/High): {first.get('bin_counts')}."]
    for w in first.get("warnings", ()):
        lines += ["", f"**Warning:** {w}."]
    lines.append("")
    lines.append("| level | MSC | SCC | n_min | covered / units | uncovered mass |")
    lines.append("|---|---|---|---|---|---|")
    for c in first["coverage"].values():
        lines.append(f"| {c['level']} | {c['msc']:.3f} | {c['scc']:.3f} | {c['n_min']} | "
                     f"{c['covered']} / {c['units']} | {c['uncovered_mass']:.3f} |")
    lines += ["", "Zero-query clusters with the largest corpus mass:", "",
              "| cluster | corpus mass | label |", "|---|---|---|"]
    for g in first["gaps"][:10]:
        lines.append(f"| {g['stratum']} | {g['mass']:.4f} | {g['label']} |")
    lines += ["", f"Estimates of {first['measure']} (expected), 95% CIs:", "",
              "| system | estimator | estimate | t CI | Rao–Wu bootstrap CI |",
              "|---|---|---|---|---|"]
    for r in _estimates_rows(report):
        lines.append("| " + " | ".join(r) + " |")
    lines += ["", "| system | uncovered weight | bounds (metric 0/1 there) | spread (all strata) "
              "| best − worst (n ≥ n_min) |", "|---|---|---|---|---|"]
    for name, b in report["systems"].items():
        bd = b.get("bounds") or {}
        sp = b.get("spread_min_n")
        spt = (f"{sp['spread']:.4f}: best {sp['best']['stratum']} "
               f"({sp['best']['expected']:.3f}, n={sp['best']['n']}), worst "
               f"{sp['worst']['stratum']} ({sp['worst']['expected']:.3f}, n={sp['worst']['n']})"
               if sp else "–")
        lines.append(f"| {name} | {b['uncovered_weight']:.3f} | [{_fmt(bd.get('low'))}, "
                     f"{_fmt(bd.get('high'))}] | {_fmt(b['spread'])} | {spt} |")
    n_min = first["settings"]["n_min"]
    names = list(report["systems"])
    lines += ["", f"Per-stratum {first['measure']} (strata with ≥ {n_min} queries), 95% t CI:",
              "",
              "| stratum | n | corpus mass | " + " | ".join(names) + " |",
              "|---|---|---|" + "---|" * len(names)]
    by = {n: {str(r["stratum"]): r for r in b["per_stratum"]} for n, b in
          report["systems"].items()}
    for r in first["per_stratum"]:
        if r["n"] < n_min:
            continue
        cells = []
        for n in names:
            x = by[n].get(str(r["stratum"]))
            cells.append(f"{x['expected']:.3f} [{_fmt(x['ci_low'], 3)}, {_fmt(x['ci_high'], 3)}]"
                         if x else "–")
        lines.append(f"| {r['stratum']} {r['label'] or ''} | {r['n']} | "
                     f"{_fmt(r['corpus_mass'])} | " + " | ".join(cells) + " |")
    st = report.get("stability")
    if st:
        lines += ["", "Decision stability:", "", "| aggregation | winner | significant | scores |",
                  "|---|---|---|---|"]
        for r in _stability_rows(st):
            lines.append("| " + " | ".join(r) + " |")
        lines.append("")
        lines.append("Order flips: " + ("; ".join(f"{f['a']} vs {f['b']}: {f['ahead']}"
                                                   for f in st["flips"]) or "none") + ".")
    return "\n".join(lines) + "\n"
