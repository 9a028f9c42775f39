"""The report's figures, inline SVG drawn with matplotlib's SVG backend: the coverage map,
the Δ×J heatmaps, the per-stratum plot and the tie panel.

Every string that comes from the user or the data (system names, labels) is drawn as plain
text (no mathtext).  Figures are built on ``matplotlib.figure.Figure`` directly, inside
``matplotlib.rc_context``: no backend switch, no pyplot state and no global rcParams change
outlive a call.
"""

from __future__ import annotations

import io
import textwrap

from .model import same_set
from .prose import evaluated_name, stratum_name, system_labels

__all__ = ["require_matplotlib", "coverage_map", "heatmaps", "per_stratum_plot", "tie_panel"]


#: No mathtext, no TeX: a user string (``$\foo^$``) is drawn as the plain text it is.
_RC = {"svg.fonttype": "none", "svg.hashsalt": "mteb-stratified", "text.parse_math": False,
       "text.usetex": False, "font.size": 9}


def require_matplotlib():
    """``(matplotlib, Figure)``, or an ImportError naming the [plots] extra."""
    try:
        import matplotlib
        from matplotlib.figure import Figure
    except ImportError:
        from .._optional import install_hint

        raise ImportError("the HTML report draws its plots with matplotlib: "
                          + install_hint("plots")) from None
    return matplotlib, Figure


def _figure(draw, figsize) -> str:
    """An inline SVG of ``draw(fig)`` on a fresh Figure (no pyplot, rcParams restored)."""
    matplotlib, Figure = require_matplotlib()
    with matplotlib.rc_context(_RC):
        fig = Figure(figsize=figsize, layout="constrained")
        draw(fig)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})  # reproducible: no timestamp
    text = buf.getvalue()
    return text[text.index("<svg"):]


def coverage_map(summary) -> str:
    """The coverage map: every cluster's corpus mass against its queries, gaps named."""
    cl = summary.clusters
    n_min = summary.n_min

    def draw(fig):
        ax = fig.subplots()
        x = [c.mass for c in cl]
        y = [c.n_queries for c in cl]
        col = ["#d62728" if n == 0 else ("#ff7f0e" if n < n_min else "#1f77b4") for n in y]
        ax.scatter(x, y, c=col, s=18)
        gaps = sorted((c for c in cl if c.n_queries == 0), key=lambda c: -c.mass)[:5]
        top = max(y) if y else 1
        for i, g in enumerate(gaps):  # staggered so the labels never overlap
            ax.annotate(stratum_name(g.cluster, g.label, 30), (g.mass, 0),
                        xytext=(g.mass, top * (0.84 - 0.11 * i)), fontsize=7,
                        arrowprops={"arrowstyle": "-", "color": "#999", "lw": 0.6},
                        ha="left", va="bottom")
        ax.axhline(n_min - 0.5, color="grey", lw=0.6, ls="--")
        ax.set_xlabel("cluster corpus mass")
        ax.set_ylabel("queries (primary cluster)")
        cov = summary.cluster_coverage
        ax.set_title(f"Coverage map: MSC {cov.msc:.3f}, SCC (n_min = {n_min}) "
                     f"{cov.scc:.3f}\nred: no query; orange: < n_min; blue: ≥ n_min; the "
                     "five heaviest gaps are named", fontsize=9)
    return _figure(draw, (9, 4.6))


def heatmaps(summary, max_clusters=6) -> str:
    """Δ×J heatmaps of the largest strata with ≥ n_min queries (a note when none)."""
    cells = [c for c in summary.cells if c.n_queries >= summary.n_min]
    cells = cells[:max_clusters]
    if not cells:
        return "<p>No stratum holds enough queries for a Δ×J heatmap.</p>"
    import numpy as np
    d_levels = summary.levels
    j_levels = summary.alignment_levels
    ncols = min(3, len(cells))
    nrows = -(-len(cells) // ncols)

    def draw(fig):
        axes = np.atleast_2d(fig.subplots(nrows, ncols, squeeze=False))
        for ax in axes.ravel()[len(cells):]:
            ax.set_axis_off()
        for ax, c in zip(axes.ravel(), cells):
            m = np.array([[np.nan if v is None else v for v in row] for row in c.mean])
            ax.imshow(m, vmin=0, vmax=1, cmap="viridis", origin="lower")
            for i in range(len(d_levels)):
                for j in range(len(j_levels)):
                    n = c.counts[i][j]
                    if n:
                        ax.text(j, i, f"{m[i, j]:.2f}\nn={n}", ha="center", va="center",
                                fontsize=7, color="white" if m[i, j] < 0.6 else "black")
            ax.set_xticks(range(len(j_levels)), j_levels, fontsize=7)
            ax.set_yticks(range(len(d_levels)), d_levels, fontsize=7)
            ax.set_xlabel("alignment J", fontsize=8)
            ax.set_ylabel("dispersion Δ", fontsize=8)
            title = textwrap.fill(evaluated_name(c, 60), 34)
            ax.set_title(f"{title}\n(n = {c.n_queries})", fontsize=8)
    return _figure(draw, (3.9 * ncols, 3.9 * nrows))


def per_stratum_plot(report) -> str:
    """Per-stratum scores with their intervals, the systems of the first query set
    side by side (a note when no stratum holds enough queries)."""
    systems = {n: report.systems[n] for n in same_set(report)}
    first = next(iter(systems.values()))
    n_min = first.n_min
    rows = [r for r in first.per_stratum if r.n >= n_min][:25]
    if not rows:
        return "<p>No stratum holds enough queries.</p>"

    def draw(fig):
        ax = fig.subplots()
        k = len(systems)
        labels = system_labels(list(systems), 40)
        for s_i, (name, summary) in enumerate(systems.items()):
            by = {r.key: r for r in summary.per_stratum}
            ys, xs, lo, hi = [], [], [], []
            for i, ref in enumerate(rows):
                r = by.get(ref.key)
                if r is None or r.ci_low is None:
                    continue
                ys.append(i + (s_i - (k - 1) / 2) * 0.25)
                xs.append(r.expected)
                lo.append(r.expected - r.ci_low)
                hi.append(r.ci_high - r.expected)
            ax.errorbar(xs, ys, xerr=[lo, hi], fmt="o", ms=3, capsize=2, label=labels[s_i])
        ax.set_yticks(range(len(rows)),
                      [f"{evaluated_name(r)} (n={r.n})" for r in rows],
                      fontsize=7)
        ax.set_xlim(-0.02, 1.02)
        ax.invert_yaxis()
        ax.set_xlabel(f"{first.measure} (expected), 95% t interval within [0, 1]")
        ax.legend(fontsize=7, loc="lower right")
        ax.set_title(f"Per-stratum scores (strata with ≥ {n_min} queries)", fontsize=9)
    return _figure(draw, (10, 0.3 * len(rows) + 1.4))


def tie_panel(report, names=None, label=None) -> str:
    """The tie range of ``names`` (pooled and corpus-weighted): [min, max] over tie orders,
    the expected and the tie-oblivious score; ``label`` names their query set."""
    systems = report.systems
    names = list(names or systems)

    def draw(fig):
        axes = fig.subplots(1, 2, sharey=True)
        for ax, (est, title) in zip(axes, (("pooled", "pooled"),
                                           ("post_stratified", "corpus-weighted"))):
            for i, name in enumerate(names):
                summary = systems[name]
                ex = summary.estimate(est)
                if ex is None:
                    continue
                lo, hi = (summary.estimate(est, value=k) or ex for k in ("min", "max"))
                ax.plot([lo.estimate, hi.estimate], [i, i], lw=6, alpha=0.4,
                        color="C%d" % (i % 10))
                ax.plot([ex.estimate], [i], "o", color="C%d" % (i % 10))
                obl = summary.estimate(est, value="oblivious")
                if obl is not None:
                    ax.plot([obl.estimate], [i], "x", color="k")
            ax.set_yticks(range(len(names)), system_labels(names, 30), fontsize=7)
            ax.set_ylim(len(names) - 0.5, -0.5)
            ax.set_title(title, fontsize=8)
        fig.suptitle("Tie range: bar = [min, max] over tie orders, ● expected, × oblivious"
                     + (f"\n{label}" if label else ""), fontsize=8)
    return _figure(draw, (9, 0.45 * len(names) + 1.5))
