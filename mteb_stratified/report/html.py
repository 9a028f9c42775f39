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
(``L5.0 (rest) · cancer / cardiovascular disease``; a fine cluster ``c12 · cancer / tumor``).  Every
string that comes from the user or the data (system names, titles, labels) is escaped in HTML
and drawn as plain text (no mathtext) in the plots.  Figures are built on
``matplotlib.figure.Figure`` directly, inside ``matplotlib.rc_context``: no backend switch, no
pyplot state and no global rcParams change outlive a call.
"""

from __future__ import annotations

import html as _html
import io
import math
import re
import textwrap

from ..core.per_query import TIE_AWARE_KEYS
from ..io.markdown import md_cell

__all__ = ["build_report", "write_html", "write_report_pair", "report_pair_problem",
           "to_markdown", "render_html", "what_this_says",
           "GLOSSARY", "stratum_name", "evaluated_name", "require_matplotlib",
           "system_labels"]

#: No mathtext, no TeX: a user string (``$\foo^$``) is drawn as the plain text it is.
_RC = {"svg.fonttype": "none", "svg.hashsalt": "mteb-stratified", "text.parse_math": False,
       "text.usetex": False, "font.size": 9}

#: Terms the report uses, in plain words (shown in the HTML and the Markdown).
GLOSSARY = (
    ("cluster", "a group of related documents of the corpus: documents clustered with Leiden "
                "(the default map), or the documents holding most of a group of related "
                "entities (the entity map); a cluster's corpus mass is the share of documents "
                "that belong to it."),
    ("stratum", "the queries whose relevant documents sit mostly in one region of the corpus: "
                "a query belongs to the cluster holding most of its relevant documents' mass, "
                "and clusters are merged along the cluster tree until every evaluated stratum "
                "holds at least --min-queries queries (L5.0: unit 0 of tree level 5; '(rest)': "
                "without its sub-units that are strata of their own); scheme 'cell' splits "
                "each stratum by Δ and J bins."),
    ("minimum detectable effect", "the smallest gap, added to one system in strata holding "
                                  "20% of the queries, that a test finds 8 times in 10 with "
                                  "these queries (simulated on their own scores); a smaller "
                                  "gap may exist unseen."),
    ("MSC", "Minimum Semantic Coverage: the share of leaves (the finest clusters of the map, "
            "each a topic of about 10-100 documents) that hold at least one query."),
    ("SCC", "Sufficient Corpus Coverage: the share of the corpus mass in leaves that hold at "
            "least n_min queries."),
    ("Δ (dispersion)", "how different the cluster profiles of a query's relevant documents "
                       "are (mean distance between two of them: 0 = alike); binned Low/Med/High "
                       "at cut-points fixed per corpus; N/A with one relevant document."),
    ("J (alignment)", "the share of the query's entities that a relevant document contains, "
                      "averaged over its relevant documents (by default over concepts: an "
                      "entity counts as found when the document has one with a near-identical "
                      "embedding); binned Low/Med/High at cut-points fixed per corpus; N/A for a "
                      "query without entities."),
    ("lexical containment", "the same share for the query's words: J is reported next to it, "
                            "to show whether the entities add anything the words do not."),
    ("pooled", "the plain mean over queries (what a leaderboard reports)."),
    ("macro", "the mean of the stratum means: every stratum counts the same."),
    ("corpus-weighted (post-stratified)", "stratum means weighted by each cluster's share of "
                                          "the corpus: what the mean would be if the queries "
                                          "covered the corpus as it is."),
    ("expected", "the measure's mean over every order of tied documents."),
    ("range", "max − min over those orders: how much tie-breaking alone can move the score."),
    ("bias", "the stock tie-oblivious score (ties broken by doc id, as trec_eval, pytrec_eval "
             "and MTEB do) − expected."),
    ("beyond chance", "compared with random strata of the same sizes (the same queries, labels "
                      "shuffled): a permutation p-value ≤ 0.05, Westfall–Young-corrected when "
                      "single strata are tested; 'A beats B in a stratum' is a sign-flip test of "
                      "the per-query differences, corrected the same way."),
)


def build_report(summaries: dict, stability=None, pairs: dict | None = None,
                 *, title: str | None = None, query_sets: dict | None = None) -> dict:
    """Bundle per-system stratified summaries (``{system: StratifiedSummary}``, from
    :func:`mteb_stratified.stratification.stratified_summary`), the stability summary and the
    paired summary (:func:`mteb_stratified.stratification.paired_summary`).

    ``query_sets``: ``{system: label of its evaluated queries}``.  When the systems were
    evaluated on different query sets, ``stability`` is a list of ``(label, summary)``, one
    per query set with two or more systems, and ``pairs`` holds pairs within a set only: the
    report then says so first, and never compares systems across sets."""
    first = next(iter(summaries.values()))
    mixed = query_sets is not None and len(set(query_sets.values())) > 1
    return {"title": title or f"Stratified evaluation ({first.measure})",
            "systems": summaries, "stability": stability, "pairs": pairs,
            "query_sets": dict(query_sets) if mixed else None}


def _stabilities(report) -> list:
    """``[(query-set label or None, stability summary)]`` of a report."""
    st = report.get("stability")
    if not st:
        return []
    return list(st) if isinstance(st, list) else [(None, st)]


def set_groups(report) -> list:
    """``[(query-set label, [system, ...])]``, the largest set first (the order the systems
    come in); ``[(None, every system)]`` when they share one query set.  Every table and plot
    that puts systems side by side shows one group at a time."""
    sets = report.get("query_sets")
    names = list(report["systems"])
    if not sets:
        return [(None, names)]
    groups: dict = {}
    for n in names:
        groups.setdefault(sets[n], []).append(n)
    return list(groups.items())


def _same_set(report) -> list:
    """The systems compared in the per-stratum plot and table: those of the first system's
    query set (every system when they share one)."""
    return set_groups(report)[0][1]


def _same_set_note(report) -> str:
    names = _same_set(report)
    return (f"Shown: the systems of one query set ({report['query_sets'][names[0]]}: "
            f"{', '.join(names)}); systems of other query sets are not compared here.")


def _query_sets_text(report) -> str:
    sets = report["query_sets"]
    groups: dict = {}
    for name, label in sets.items():
        groups.setdefault(label, []).append(name)
    return (f"Query sets: these systems were evaluated on {len(groups)} different query sets ("
            + "; ".join(f"{label}: {', '.join(names)}" for label, names in groups.items())
            + "). Figures of different query sets are not comparable: each system is compared "
              "only with the systems of its own set, and none is ranked across sets.")


def _fmt(x, nd=4, *, signed: bool = False) -> str:
    if x is None:
        return "–"
    x = round(float(x), nd) + 0.0  # no "-0.0000"
    return f"{x:+.{nd}f}" if signed else f"{x:.{nd}f}"


def _esc(x) -> str:
    return _html.escape(str(x), quote=True)


def _short(text, width: int = 42) -> str:
    text = str(text or "")
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


def system_labels(names, width: int = 30) -> list[str]:
    """Plot labels of system names, at most ``width`` characters, never two alike.  What the
    names share is left out first: the organisation (``mteb-stratified/``) when the names stay
    apart without it.  A label still too long keeps its tail, where model variants differ
    (``…MiniLM-L6-v2-bf16-hps``), and labels still alike get their position (``#2``)."""
    names = [str(n) for n in names]
    short = [n.split("/", 1)[1] if "/" in n and n.split("/", 1)[1] else n for n in names]
    if len(set(short)) == len(short):
        names = short

    def cut(name: str) -> str:
        return name if len(name) <= width else "…" + name[len(name) - (width - 1):]

    labels = [cut(n) for n in names]
    return [lab if labels.count(lab) == 1 else f"{lab[: width - 4]} #{i + 1}"
            for i, lab in enumerate(labels)]


def stratum_name(stratum, label, width: int = 42) -> str:
    """``c12 · cancer / tumor / breast cancer`` (a cell: ``c12 Low Δ High J · ...``)."""
    if isinstance(stratum, (list, tuple)):
        c, d, j = stratum
        head = f"c{c}" + (f" {d} Δ {j} J" if d is not None else "")
    else:
        head = f"c{stratum}"
    return f"{head} · {_short(label, width)}" if label else head


def evaluated_name(row, width: int = 42) -> str:
    """An evaluated stratum's name: ``L5.0 (rest) · cancer / …`` (a cell adds its Δ and J)."""
    head = row.get("name") or f"s{row['stratum']}"
    st = row.get("stratum")
    if isinstance(st, (list, tuple)) and st[1] not in ("all", None):
        head += f" {st[1]} Δ {st[2]} J"
    label = row.get("label")
    return f"{head} · {_short(label, width)}" if label else head


# -- figures ---------------------------------------------------------------------------------
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


def _coverage_map(summary) -> str:
    cl = summary.clusters
    n_min = summary.n_min

    def draw(fig):
        ax = fig.subplots()
        x = [c["mass"] for c in cl]
        y = [c["n_queries"] for c in cl]
        col = ["#d62728" if n == 0 else ("#ff7f0e" if n < n_min else "#1f77b4") for n in y]
        ax.scatter(x, y, c=col, s=18)
        gaps = sorted((c for c in cl if c["n_queries"] == 0), key=lambda c: -c["mass"])[:5]
        top = max(y) if y else 1
        for i, g in enumerate(gaps):  # staggered so the labels never overlap
            ax.annotate(stratum_name(g["cluster"], g["label"], 30), (g["mass"], 0),
                        xytext=(g["mass"], top * (0.84 - 0.11 * i)), fontsize=7,
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


def _heatmaps(summary, max_clusters=6) -> str:
    cells = [c for c in summary.cells if c["n_queries"] >= summary.n_min]
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
            m = np.array([[np.nan if v is None else v for v in row] for row in c["mean"]])
            ax.imshow(m, vmin=0, vmax=1, cmap="viridis", origin="lower")
            for i in range(len(d_levels)):
                for j in range(len(j_levels)):
                    n = c["counts"][i][j]
                    if n:
                        ax.text(j, i, f"{m[i, j]:.2f}\nn={n}", ha="center", va="center",
                                fontsize=7, color="white" if m[i, j] < 0.6 else "black")
            ax.set_xticks(range(len(j_levels)), j_levels, fontsize=7)
            ax.set_yticks(range(len(d_levels)), d_levels, fontsize=7)
            ax.set_xlabel("alignment J", fontsize=8)
            ax.set_ylabel("dispersion Δ", fontsize=8)
            title = textwrap.fill(evaluated_name(c, 60), 34)
            ax.set_title(f"{title}\n(n = {c['n_queries']})", fontsize=8)
    return _figure(draw, (3.9 * ncols, 3.9 * nrows))


def _per_stratum_plot(report) -> str:
    systems = {n: report["systems"][n] for n in _same_set(report)}
    first = next(iter(systems.values()))
    n_min = first.n_min
    rows = [r for r in first.per_stratum if r["n"] >= n_min][:25]
    if not rows:
        return "<p>No stratum holds enough queries.</p>"

    def draw(fig):
        ax = fig.subplots()
        k = len(systems)
        labels = system_labels(list(systems), 40)
        for s_i, (name, summary) in enumerate(systems.items()):
            by = {str(r["stratum"]): r for r in summary.per_stratum}
            ys, xs, lo, hi = [], [], [], []
            for i, ref in enumerate(rows):
                r = by.get(str(ref["stratum"]))
                if r is None or r["ci_low"] is None:
                    continue
                ys.append(i + (s_i - (k - 1) / 2) * 0.25)
                xs.append(r["expected"])
                lo.append(r["expected"] - r["ci_low"])
                hi.append(r["ci_high"] - r["expected"])
            ax.errorbar(xs, ys, xerr=[lo, hi], fmt="o", ms=3, capsize=2, label=labels[s_i])
        ax.set_yticks(range(len(rows)),
                      [f"{evaluated_name(r)} (n={r['n']})" for r in rows],
                      fontsize=7)
        ax.set_xlim(-0.02, 1.02)
        ax.invert_yaxis()
        ax.set_xlabel(f"{first.measure} (expected), 95% t interval within [0, 1]")
        ax.legend(fontsize=7, loc="lower right")
        ax.set_title(f"Per-stratum scores (strata with ≥ {n_min} queries)", fontsize=9)
    return _figure(draw, (10, 0.3 * len(rows) + 1.4))


def _tie_panel(report, names=None, label=None) -> str:
    systems = report["systems"]
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


# -- the headline ------------------------------------------------------------------------------
#: The level of every "beyond chance" the headline states.
ALPHA = 0.05


def _pair_of(report, a: str, b: str):
    """The paired result of ``a`` and ``b`` (either order), or None."""
    for pair in (report.get("pairs") or {}).get("pairs", ()):
        if {pair["a"], pair["b"]} == {a, b}:
            return pair
    return None


def _value(summary, value: str, estimator: str = "pooled"):
    est = summary.estimate(estimator, value=value)
    return None if est is None else est.estimate


def _ties_point(report, names) -> str:
    systems = report["systems"]
    parts = []
    for n in names[:3]:
        lo, hi, bias = (_value(systems[n], v) for v in ("min", "max", "bias"))
        if lo is not None and hi is not None:
            parts.append(f"{n}: range {hi - lo:.4f}, bias {_fmt(bias, signed=True)}")
    if not parts:
        return ""
    text = "Ties: the order of tied documents moves the score by (" + "; ".join(parts) + ")"
    if len(names) > 1 and all(_value(systems[n], "oblivious") is not None for n in names):
        by_e = sorted(names, key=lambda n: (-systems[n].pooled.estimate, n))
        by_o = sorted(names, key=lambda n: (-_value(systems[n], "oblivious"), n))
        text += ("; ranking by the stock (tie-oblivious) score WOULD DIFFER" if by_e != by_o
                 else "; ranking by the stock (tie-oblivious) score is the same")
    return text + "."


def _any_strata_test_significant(pair) -> bool:
    """True when a test of whether the pair's gap varies across strata is significant at
    :data:`ALPHA`: its heterogeneity (max-|z| or omnibus), the flips or split-half.  (Whether
    a − b ≠ 0 within a stratum is another question, and not counted here.)"""
    if not pair.get("tested"):
        return False
    h = pair["heterogeneity"]
    p = [h.get("p_value"), h.get("omnibus_p_value"), (pair.get("flips") or {}).get("p_value"),
         (pair.get("split_half") or {}).get("p_value")]
    return any(x is not None and x <= ALPHA for x in p)


def _variation_bound_text(pair, grain: str = "topics") -> str:
    """The headline's sentence on how much the gap varies across topics ("" when there is no
    estimable fit): its bound first when no strata test is significant ("varies … by at most
    0.052"), the estimate and the bound after the strata verdict when one is."""
    v = (pair.get("variation") or {}).get(grain) or {}
    if not v.get("estimable") or v.get("tau_upper") is None:
        return ""
    if v.get("degenerate"):
        return (f" The gap is the same on every query: it does not vary across these "
                f"{v['n_groups']} {grain} (a degenerate fit, bound 0).")
    if not _any_strata_test_significant(pair):
        return (f" The gap varies across these {v['n_groups']} {grain} by at most "
                f"{v['tau_upper']:.3f} (95% upper bound on its between-{grain[:-1]} SD; REML "
                f"estimate {v['tau']:.3f}).")
    return (f" A strata test finds the gap varying; across these {v['n_groups']} {grain} its "
            f"SD is {v['tau']:.3f} (REML), at most {v['tau_upper']:.3f} (95% upper bound).")


def variation_sentence(pair, grain: str = "topics") -> str:
    """The pair's τ in words, estimable or not (for the pair's paragraph)."""
    v = (pair.get("variation") or {}).get(grain) or {}
    if not v:
        return ""
    if not v.get("estimable"):
        return f" How much the gap varies across {grain}: not estimable ({v.get('why')})."
    if v.get("degenerate"):
        return f" {v.get('note')}."
    bound = ("no finite upper bound" if v.get("tau_upper") is None
             else f"at most {v['tau_upper']:.3f} (95% upper bound)")
    return (f" Across the {v['n_groups']} {grain} the gap's SD (τ, REML random intercept) is "
            f"{v['tau']:.3f}, {bound}; the shrunken gap per {grain[:-1]} is tabled below.")


def headline(report) -> tuple[str, list[str]]:
    """The report's top: one sentence (who leads, by how much, whether beyond chance, and the
    smallest gap these queries could see: the paired t test's MDE at 80% power; then how much
    the gap can vary across the topics, :func:`_variation_bound_text`) and at most
    five short points (ties, the corpus-weighted view, the strata, coverage, other query
    sets).  Of the largest query set; other sets are named, never compared."""
    groups = set_groups(report)
    label, names = groups[0]
    systems = report["systems"]
    first = systems[names[0]]
    measure = first.measure
    on = f"{first.n_queries} queries" + (f" ({label})" if label else "")
    by = sorted(names, key=lambda n: (-systems[n].pooled.estimate, n))
    pair = _pair_of(report, by[0], by[1]) if len(by) > 1 else None
    if len(by) < 2:
        e = systems[by[0]].pooled
        head = (f"{by[0]} scores {e.estimate:.4f} in {measure} (expected over tie orders, 95% "
                f"CI [{_fmt(e.ci_low)}, {_fmt(e.ci_high)}]) on {on}; one system, so nothing "
                "is compared.")
    elif pair is None:
        gap = systems[by[0]].pooled.estimate - systems[by[1]].pooled.estimate
        head = (f"{by[0]} leads {by[1]} by {gap:.4f} in {measure} (expected) on {on}; no paired "
                "test was run.")
    else:
        o = pair["overall"]
        sign = 1 if pair["a"] == by[0] else -1
        gap, lo, hi = (sign * o[k] for k in ("mean_difference", "ci_low", "ci_high"))
        lead, other = (by[0], by[1]) if gap >= 0 else (by[1], by[0])
        if gap < 0:
            gap, lo, hi = -gap, -hi, -lo
        lo, hi = min(lo, hi), max(lo, hi)
        others = f" (and {len(by) - 2} more)" if len(by) > 2 else ""
        verdict = ("beyond chance" if o["p_value"] <= ALPHA else
                   "NOT beyond chance: these queries do not settle which is better")
        head = (f"{lead} leads {other}{others} by {gap:.4f} in {measure} (expected) on {on}, "
                f"95% CI [{_fmt(lo, signed=True)}, {_fmt(hi, signed=True)}], paired t p = "
                f"{o['p_value']:.3f}: {verdict}. The smallest gap these queries would detect "
                f"8 times in 10 is {o['mde']:.4f}.")
        head += _variation_bound_text(pair)
    points = []
    ties = _ties_point(report, by)
    if ties:
        points.append(ties)
    cw = {n: systems[n].post_stratified for n in by if systems[n].post_stratified is not None}
    if len(cw) == len(by):
        cw_lead = max(by, key=lambda n: (cw[n].estimate, n))
        points.append("Corpus-weighted (strata weighted by their share of the corpus): "
                      + ", ".join(f"{n} {cw[n].estimate:.4f}" for n in by)
                      + (f"; {cw_lead} leads there instead." if len(by) > 1 and cw_lead != by[0]
                         else "."))
    if pair is not None and pair.get("tested"):
        h = pair["heterogeneity"]
        n_strata = len(pair["stratum_differences"]["strata"])
        points.append(f"Strata: the gap {'varies' if h['p_value'] <= ALPHA else 'does not vary'}"
                      f" across the {n_strata} evaluated strata more than across random strata "
                      f"of the same sizes (permutation p = {h['p_value']:.3f}).")
    elif first.heterogeneity is not None:
        h = first.heterogeneity
        points.append(f"Strata: {names[0]}'s {len(h.strata)} evaluated strata "
                      f"{'differ' if h.pvalue <= ALPHA else 'do not differ'} more than random "
                      f"strata of the same sizes (permutation p = {h.pvalue:.3f}).")
    cov = first.cluster_coverage
    points.append(f"Coverage: {cov.covered} of {cov.weighted_units} leaves hold a query "
                  f"(MSC {cov.msc:.3f}); {_pct(cov.uncovered_mass)} of the corpus lies where no "
                  "query reaches.")
    if len(groups) > 1:
        points.append(f"{len(groups) - 1} other query set(s), reported apart below and never "
                      "compared with these: " + "; ".join(
                          f"{lab}: {', '.join(ns)}" for lab, ns in groups[1:]) + ".")
    return head, points[:5]


# -- plain words -------------------------------------------------------------------------------
def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _has_split_half(sh) -> bool:
    """A split-half result whose r, null r and p-value are all finite."""
    return sh is not None and all(math.isfinite(x) for x in (sh.r, sh.null_r, sh.pvalue))


def _mde_cell(power) -> str:
    if not power:
        return "–"
    return " / ".join("–" if power["mde"].get(k) is None else f"{power['mde'][k]:.3f}"
                      for k in ("0.2", "0.1"))


def _split_half_cell(sh) -> str:
    if not _has_split_half(sh):
        return "–"
    return f"{sh.r:.2f} ({sh.null_r:.2f}), p = {sh.pvalue:.3f}"


def _mde_text(power, measure: str, n_queries: int) -> str:
    """"With these 323 queries, a stratum gap smaller than 0.12 in nDCG@10 …" (or nothing)."""
    if not power:
        return ""
    m20, m10 = power["mde"].get("0.2"), power["mde"].get("0.1")
    if m20 is None and all(v is None for v in power["power"].get("0.2", {}).values()):
        text = (f" No set of these strata holds 20% of the {n_queries} queries, so no stratum "
                "gap of that size could be planted to measure what the tests can see")
    elif m20 is None:
        text = (f" With these {n_queries} queries not even a gap of {power['grid'][-1]:.2f} in "
                f"{measure} in strata holding 20% of the queries would be seen 8 times in 10")
    else:
        text = (f" With these {n_queries} queries, a stratum gap smaller than {m20:.2f} in "
                f"{measure} (in strata holding 20% of the queries) cannot be seen 8 times in 10")
    if m10 is not None:
        text += f"; at 10% of the queries, one smaller than {m10:.2f}"
    elif power["power"].get("0.1") and all(v is None for v in power["power"]["0.1"].values()):
        text += "; no set of these strata holds only 10% of the queries"
    return text + "."


def _pair_paragraph(pair, measure: str) -> str:
    a, b = pair["a"], pair["b"]
    o = pair["overall"]
    text = (f"Where does {a} beat {b}? Over the {pair['n_queries']} shared queries, {a} − {b} "
            f"= {o['mean_difference']:+.4f} in {measure} (95% CI [{o['ci_low']:+.4f}, "
            f"{o['ci_high']:+.4f}], paired t p = {o['p_value']:.3f}).")
    if not pair.get("tested"):
        return (text + f" The strata are not compared: {pair.get('why', '')}."
                + variation_sentence(pair))
    wins = [r for r in pair["stratum_differences"]["strata"] if r["winner"] is not None]
    n_strata = len(pair["stratum_differences"]["strata"])
    if wins:
        text += (" Beyond chance (sign-flip test per stratum, Westfall–Young over the "
                 f"{n_strata} strata): " + "; ".join(
                     f"{r['winner']} wins in {evaluated_name(r, 40)} ({r['mean_difference']:+.3f}"
                     f", n = {r['n']}, adjusted p = {r['p_adjusted']:.3f})" for r in wins[:5])
                 + ".")
    else:
        text += (f" In none of the {n_strata} strata does either system win beyond chance "
                 "(sign-flip test per stratum, Westfall–Young).")
    h = pair["heterogeneity"]
    apart = [r for r in h["strata"] if r["p_adjusted"] <= 0.05]
    if h["p_value"] <= 0.05:
        text += (f" The gap varies across strata more than across random strata of the same "
                 f"sizes (max-|z| permutation p = {h['p_value']:.3f}; omnibus p = "
                 f"{h['omnibus_p_value']:.3f})")
        text += (": " + "; ".join(f"{evaluated_name(r, 40)} ({r['mean']:+.3f})" for r in apart[:5])
                 + " stands apart." if apart else ".")
    else:
        text += (f" The gap does not vary across strata more than across random strata of the "
                 f"same sizes (max-|z| permutation p = {h['p_value']:.3f}; omnibus p = "
                 f"{h['omnibus_p_value']:.3f}).")
    return (text + _mde_text(pair.get("power"), measure, pair["n_queries"])
            + variation_sentence(pair))


def _origin_paragraphs(systems: dict, measure: str) -> list[str]:
    """Generated queries said apart: a split of generated queries only, or the generated
    queries of a merged split (left out of every estimate and test, their mean beside)."""
    first = next(iter(systems.values()))
    out = []
    if first.origin != "original":
        out.append(f"Generated queries: every query of this split is {first.origin}; these "
                   "figures describe the generated queries and do not stand for the original "
                   "split. The generator's validity gate: "
                   + (first.gate_verdict or "none found (no coverage.json next to the "
                                                   "dataset)"))
    rows = [(name, b.generated) for name, b in systems.items() if b.generated]
    if rows:
        n = rows[0][1]["generated"]["n_queries"]
        out.append(f"Generated queries: {n} of this split's queries are generated; they are "
                   "left out of every estimate and test here and reported apart: " + "; ".join(
                       f"{name} {g['generated']['estimate']:.3f} on them"
                       + ("" if g["generated"]["ci_low"] is None else
                          f" (95% CI [{g['generated']['ci_low']:.3f}, "
                          f"{g['generated']['ci_high']:.3f}])")
                       + f" against {g['original']['estimate']:.3f} on the "
                       f"{g['original']['n_queries']} original queries" for name, g in rows)
                   + f" ({measure}, pooled).")
    return out


def what_this_says(report: dict) -> list[str]:
    """Plain-word paragraphs, the paired question first, then coverage gaps, differences
    beyond chance, J against lexical overlap and ranking stability."""
    systems = report["systems"]
    first_name, first = next(iter(systems.items()))
    measure = first.measure
    cov = first.cluster_coverage
    n_min = first.n_min
    out = [_query_sets_text(report)] if report.get("query_sets") else []
    pairs = report.get("pairs") or {}
    for pair in pairs.get("pairs", ()):
        out.append(_pair_paragraph(pair, measure))
    out += _origin_paragraphs(systems, measure)
    if len(systems) < 2 or pairs.get("note"):
        out.append("Paired tests: " + (pairs.get("note") or "one system only: the paired "
                                       "tests need two or more systems on the same queries")
                   + ".")
    g = first.grain
    if g:
        out.append(f"Strata: {g['n_strata']} evaluated strata of at least {g['min_queries']} "
                   f"queries each, from levels {', '.join(str(x) for x in g['levels'])} of the "
                   f"cluster tree ({g['why']}); coverage below counts the leaves (the finest "
                   "clusters).")
    weightless = (f" ({cov.weightless} more are no document's own stratum, carry no weight "
                  "and are left out)" if cov.weightless else "")
    text = (f"Coverage: {cov.covered} of {cov.weighted_units} leaves hold at least one "
            f"query{weightless} (MSC {cov.msc:.3f}); leaves with at least {n_min} queries "
            f"hold {_pct(cov.scc)} of the corpus mass (SCC), and {_pct(cov.uncovered_mass)} "
            "of the corpus mass lies in leaves no query reaches")
    gaps = first.gaps[:3]
    if gaps:
        text += (" (the largest: " + "; ".join(f"“{_short(g.label, 50)}”, "
                                                 f"{_pct(g.mass)}" for g in gaps) + ")")
    bd = first.bounds
    text += "."
    if bd and cov.uncovered_mass:
        text += (f" No query measures the systems there: with {measure} 0 or 1 on every "
                 f"uncovered cluster, the corpus-weighted mean of {first_name} could be "
                 f"anywhere in [{bd['low']:.3f}, {bd['high']:.3f}].")
    out.append(text)
    for name, b in systems.items():
        h = b.heterogeneity
        if h is None:
            continue
        beyond = h.pvalue <= 0.05
        text = (f"{name}: the strata explain {_pct(h.eta_squared)} of the per-query "
                f"variance of {measure}; random strata of the same sizes explain "
                f"{_pct(h.null_eta_squared)} on average (95% of them up to "
                f"{_pct(h.null_eta_squared_95)}); permutation p = {h.pvalue:.3f}, so "
                + ("the strata differ beyond chance." if beyond else
                   "there is no evidence that the strata differ more than random strata of "
                   "the same sizes would."))
        sh = b.split_half
        if _has_split_half(sh):
            text += (f" Split in two random halves ({sh.n_splits} splits, averaged), the "
                     f"stratum means agree at r = {sh.r:.2f} (random strata: {sh.null_r:.2f}; p = "
                     f"{sh.pvalue:.3f}): " + ("they replicate beyond chance." if
                                              sh.pvalue <= 0.05 else
                                                  "they do not replicate beyond chance."))
        diff = [r for r in h.strata if r["p_adjusted"] <= 0.05]
        tested = len(h.strata)
        if diff:
            text += (f" Of the {tested} strata with ≥ {h.min_size} queries, "
                     f"{len(diff)} differ from the rest beyond chance (Westfall–Young): "
                     + "; ".join(f"{evaluated_name(r, 40)} (mean {r['mean']:.3f}, n = "
                                 f"{r['n']})" for r in diff[:5]) + ".")
        elif tested:
            text += (f" None of the {tested} strata with ≥ {h.min_size} queries differs "
                     "from the rest beyond chance (Westfall–Young): these queries cannot "
                     "single out a stratum as harder or easier.")
        text += _mde_text(b.power, measure, b.n_queries)
        out.append(text)
    lex = first.alignment_vs_lexical
    if lex:
        out.append(f"J against lexical overlap ({next(iter(systems))}): {lex['verdict']}.")
    for label, st in _stabilities(report):
        out.append(_ranking_text(st, "Ranking" + (f" ({label})" if label else "")))
    if not _stabilities(report):
        out.append("Ranking: " + ("no two systems share a query set" if report.get("query_sets")
                                  else "one system only") + ", so there is no ranking to check.")
    return out


def _ranking_text(st, head: str) -> str:
    """Who leads under each aggregation, and whether the lead is significant."""
    labels = _EST_LABELS
    winners = st["winners"]
    sig = st["winner_significant"]
    leaders = set(winners.values())
    sig_aggs = [labels.get(a, a) for a, v in sig.items() if v]
    if len(leaders) == 1:
        text = (f"{head}: {next(iter(leaders))} leads under every aggregation "
                f"({', '.join(labels.get(a, a) for a in winners)})")
    else:
        text = (f"{head}: the leader changes with the aggregation ("
                + ", ".join(f"{labels.get(a, a)}: {w}" for a, w in winners.items()) + ")")
    if sig_aggs:
        return text + f"; the lead is significant (95%) for {', '.join(sig_aggs)}."
    return text + ("; no lead is significant at 95%, so these queries do not settle which "
                   "system is better.")


# -- tables ------------------------------------------------------------------------------------
def _table(head, rows, *, row_headers: bool = False) -> str:
    h = ("<thead><tr>" + "".join(f"<th>{_esc(c)}</th>" for c in head) + "</tr></thead>"
         if head else "")

    def cells(r):
        return "".join(f"<th>{_esc(c)}</th>" if row_headers and i == 0 else f"<td>{_esc(c)}</td>"
                       for i, c in enumerate(r))
    body = "".join(f"<tr>{cells(r)}</tr>" for r in rows)
    return f"<table>{h}<tbody>{body}</tbody></table>"


_EST_LABELS = {"pooled": "pooled", "macro": "macro", "post_stratified": "corpus-weighted"}


def _estimates_rows(report, names=None):
    rows = []
    for name in names or report["systems"]:
        b = report["systems"][name]
        for est, a in b.estimates["expected"]["analytic"].items():
            bs = b.estimate(est, method="bootstrap")
            rows.append([name, _EST_LABELS.get(est, est), _fmt(a.estimate),
                         f"[{_fmt(a.ci_low)}, {_fmt(a.ci_high)}]",
                         f"[{_fmt(bs.ci_low)}, {_fmt(bs.ci_high)}]"])
    return rows


def _stability_rows(st):
    rows = []
    for agg, w in st["winners"].items():
        rows.append([_EST_LABELS.get(agg, agg), w, "yes" if st["winner_significant"][agg] else "no",
                     ", ".join(f"{s}={v:.4f}" for s, v in st["scores"][agg].items())])
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
    return (f"{g['n_strata']} (scheme: {summary.scheme}; --min-queries {g['min_queries']}, "
            f"tree levels {', '.join(str(x) for x in g['levels'])})")


def _pair_rows(pair) -> list:
    """One row per evaluated stratum of a pair: n, a − b [CI], winner, deviation p."""
    dev = {str(r["stratum"]): r for r in pair["heterogeneity"]["strata"]}
    rows = []
    for r in pair["stratum_differences"]["strata"]:
        h = dev.get(str(r["stratum"]), {})
        rows.append([evaluated_name(r, 40), r["n"], _fmt(r["mean_difference"], signed=True),
                     f"[{_fmt(r['ci_low'], signed=True)}, {_fmt(r['ci_high'], signed=True)}]",
                     f"{r['p_adjusted']:.3f}", r["winner"] or "neither",
                     f"{h['p_adjusted']:.3f}" if h else "–"])
    return rows


def variation_rows(pair, grain: str = "topics") -> list:
    """One row per group of the pair's random-effects fit, largest first: the group, n, the
    raw mean gap, the shrunken gap and its 95% interval."""
    v = (pair.get("variation") or {}).get(grain) or {}
    if not v.get("estimable") or v.get("degenerate"):
        return []
    rows = sorted(v["groups"], key=lambda g: (-g["n"], g["group"]))
    return [[evaluated_name({"name": g["name"], "label": g["label"]}, 40), g["n"],
             _fmt(g["mean"], signed=True), _fmt(g["shrunken"], signed=True),
             f"[{_fmt(g['ci_low'], signed=True)}, {_fmt(g['ci_high'], signed=True)}]"]
            for g in rows]


VARIATION_HEAD = ["topic", "n", "a − b (raw)", "a − b (shrunken)", "95% interval"]


def _pairs_html(report) -> list:
    pairs = report.get("pairs") or {}
    if not pairs.get("pairs"):
        return [f"<p>{_esc(pairs.get('note') or 'Needs ≥ 2 systems.')}</p>"]
    parts = []
    for pair in pairs["pairs"]:
        parts.append(f"<h3>{_esc(pair['a'])} − {_esc(pair['b'])}</h3>")
        parts.append(f"<p>{_esc(_pair_paragraph(pair, report['systems'][pair['a']].measure))}"
                     "</p>")
        if pair.get("tested"):
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
    first = next(iter(report["systems"].values()))
    bins = first.bins
    counts = first.bin_counts

    def per_bin(key):
        c = counts.get(key)
        return "" if not c else " (queries per bin: " + " / ".join(str(x) for x in c) + ")"

    return [
        ["systems", ", ".join(report["systems"])],
        ["measure", first.measure],
        ["queries stratified", f"{first.n_queries} ({first.n_excluded} excluded: no "
                               "relevant document or no cluster mass)"],
        ["leaves", f"{first.cluster_coverage.n_units} leaves, the finest clusters (coverage "
                   "and gaps)"],
        ["evaluated strata", _grain_text(first)],
        ["Δ cut-points", _cuts(bins.dispersion, first.levels) + per_bin("dispersion")],
        ["J cut-points", _cuts(bins.alignment, first.alignment_levels) + per_bin("alignment")],
        ["cut-points from", bins.source],
        ["n_min (SCC)", first.n_min],
        ["intervals", f"{int(100 * first.confidence_level)}% Student t (Satterthwaite df) and "
                      f"Rao–Wu bootstrap ({first.n_resamples} resamples, seed {first.seed}); "
                      f"{first.settings['interval_range']}"],
    ]


_CSS = ("body{font-family:system-ui,sans-serif;max-width:1300px;margin:auto;padding:0 16px;"
        "line-height:1.4}table{border-collapse:collapse;font-size:13px;margin:6px 0}"
        "td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}"
        "th{background:#f4f4f4}figure{margin:10px 0}figure svg{max-width:100%;height:auto}"
        ".says{background:#f6f9ff;border-left:4px solid #1f77b4;padding:6px 14px}"
        "dl{display:grid;grid-template-columns:max-content auto;gap:4px 14px;font-size:13px}"
        "dt{font-weight:bold}dd{margin:0}"
        ".headline{font-size:17px;font-weight:600;margin:8px 0}#key-points li{margin:2px 0}")


def render_html(report: dict) -> str:
    """The report as one self-contained HTML string."""
    title = _esc(report["title"])
    first_name, first = next(iter(report["systems"].items()))
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
                        [[c.level, _fmt(c.msc), _fmt(c.scc), c.n_min, c.covered,
                          c.weighted_units, _fmt(c.uncovered_mass)]
                         for c in first.coverage.values()]))
    parts.append(f"<figure id='coverage-map'>{_coverage_map(first)}</figure>")
    parts.append("<h3>Gaps: clusters without queries, heaviest first</h3>")
    parts.append(_table(["cluster", "corpus mass", "label"],
                        [[g.stratum, _fmt(g.mass), g.label] for g in first.gaps[:15]]))
    parts.append("<h2 id='estimates'>Estimates (expected)</h2>")
    parts.extend(_estimates_html(report))
    parts.append("<h2 id='chance'>Do the strata differ beyond chance?</h2>")
    parts.append("<p>η² is the share of the per-query variance the strata explain; the null "
                 "column is what random strata of the same sizes explain (the same queries, "
                 "labels shuffled).</p>")
    systems = report["systems"]
    for label, names in set_groups(report):
        if label:
            parts.append(f"<h3>{_esc(label)}</h3>")
        parts.append(_table(["system", "η² (strata)", "η² (random strata, mean)",
                             "η² (random, 95%)", "permutation p", "split-half r (random)",
                             "strata apart (Westfall–Young)", "MDE (20% / 10%)"],
                            [[n, _pct(h.eta_squared), _pct(h.null_eta_squared),
                              _pct(h.null_eta_squared_95), f"{h.pvalue:.3f}",
                              _split_half_cell(systems[n].split_half),
                              "; ".join(evaluated_name(s, 30) for s in h.strata
                                        if s["p_adjusted"] <= ALPHA) or "none",
                              _mde_cell(systems[n].power)]
                             for n in names if (h := systems[n].heterogeneity) is not None]))
    parts.append("<h2 id='strata'>Per-stratum scores</h2>")
    if report.get("query_sets"):
        parts.append(f"<p>{_esc(_same_set_note(report))}</p>")
    parts.append(f"<figure id='per-stratum'>{_per_stratum_plot(report)}</figure>")
    parts.append(f"<h2 id='cells'>Δ×J heatmaps (large clusters, {_esc(first_name)})</h2>")
    parts.append(f"<figure id='heatmaps'>{_heatmaps(first)}</figure>")
    parts.append("<h2 id='stability'>Decision stability</h2>")
    for label, st in _stabilities(report):
        if label:
            parts.append(f"<h3>{_esc(label)}</h3>")
        parts.append(_table(["aggregation", "winner", "significant", "scores"],
                            _stability_rows(st)))
        flips = st["flips"]
        sig_flips = st.get("significant_flips", flips)
        parts.append("<p>Flips between aggregations (counted only when one of the "
                     "disagreeing orders is significant): " + (_esc("; ".join(
                         f"{f['a']} vs {f['b']} (" + ", ".join(
                             f"{_EST_LABELS.get(a, a)}: {w}" for a, w in f["ahead"].items())
                         + ")" for f in sig_flips)) if sig_flips else "none")
                     + (f" ({len(flips) - len(sig_flips)} more without significance)"
                        if len(flips) > len(sig_flips) else "") + ".</p>")
    if _stabilities(report):
        for pair in (report.get("pairs") or {}).get("pairs", ()):
            f = pair.get("flips")
            if not f:
                continue
            parts.append(
                f"<p>Per stratum, {_esc(pair['a'])} vs {_esc(pair['b'])}: {f['flips']} of "
                f"{f['tested']} strata reverse the overall order "
                f"(random strata of the same sizes: {f['null_flip_rate'] * f['tested']:.1f}); "
                f"{f['significant_flips']} significantly (paired t, Holm; random: "
                f"{f['null_significant_rate'] * f['tested']:.2f}); flip strength permutation "
                f"p = {f['p_value']:.3f}.</p>")
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
            b = report["systems"][name]
            if b.bounds:
                bd = b.bounds
                parts.append(f"<p>{_esc(name)}: uncovered corpus weight "
                             f"{b.uncovered_weight:.3f}; corpus-weighted bounds (metric 0 / 1 "
                             f"on uncovered clusters) [{bd['low']:.4f}, {bd['high']:.4f}]</p>")
    return parts


def _tie_rows(report, names) -> list:
    systems = report["systems"]
    return [[n] + [_fmt(systems[n].estimate("pooled", value=k).estimate, signed=k == "bias")
                   if k in systems[n].estimates else "–"
                   for k in TIE_AWARE_KEYS] for n in names]


def _ties_html(report) -> list:
    """The ties plot and table, one of each per query set (a set named above its own)."""
    parts = []
    for k, (label, names) in enumerate(set_groups(report)):
        if label:
            parts.append(f"<h3>{_esc(label)}</h3>")
        fid = "ties" if k == 0 else f"ties-{k + 1}"
        parts.append(f"<figure id='{fid}'>{_tie_panel(report, names, label)}</figure>")
        parts.append(_table(["system", *TIE_AWARE_KEYS], _tie_rows(report, names)))
    return parts


def write_html(report: dict, path) -> str:
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


def write_report_pair(report: dict, html_path, md_path) -> tuple[str, str]:
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
    if pair.get("tested"):
        lines += [f"{md_cell(pair['a'])} − {md_cell(pair['b'])} per evaluated stratum:", "",
                  "| stratum | n | a − b | 95% CI | p (a − b ≠ 0) | winner | p (gap apart) |",
                  "|---|---|---|---|---|---|---|"]
        lines += ["| " + " | ".join(md_cell(x) for x in row) + " |" for row in _pair_rows(pair)]
        lines.append("")
    rows = variation_rows(pair)
    if rows:
        lines += [f"{md_cell(pair['a'])} − {md_cell(pair['b'])} per topic, shrunken toward "
                  "the mean (REML random intercept):", "",
                  "| " + " | ".join(VARIATION_HEAD) + " |", "|" + "---|" * len(VARIATION_HEAD)]
        lines += ["| " + " | ".join(md_cell(x) for x in row) + " |" for row in rows]
        lines.append("")
    return lines


def to_markdown(report: dict) -> str:
    """A Markdown summary: what this says, coverage, gaps, estimates, spread, stability."""
    first = next(iter(report["systems"].values()))
    measure = md_cell(first.measure)
    head, points = headline(report)
    lines = [f"# {md_cell(report['title'])}", "", f"**{md_cell(head)}**", ""]
    lines += [f"- {md_cell(p)}" for p in points] + [""]
    lines.append(f"{first.n_queries} stratified queries ({first.n_excluded} excluded), "
                 f"{first.n_clusters} clusters, scheme {md_cell(first.scheme)}.")
    counts = first.bin_counts
    for key, name, levels in (("dispersion", "Δ", first.levels),
                              ("alignment", "J", first.alignment_levels)):
        if counts.get(key):
            lines += ["", f"Queries per {name} bin: " + ", ".join(
                f"{lev} {n}" for lev, n in zip(levels, counts[key])) + "."]
    for w in first.warnings:
        lines += ["", f"**Warning:** {md_cell(w)}."]
    lines += ["", "## What this says", ""]
    for p in what_this_says(report):
        lines += [md_cell(p), ""]
    for pair in (report.get("pairs") or {}).get("pairs", ()):
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
    for name, b in report["systems"].items():
        bd = b.bounds or {}
        sp = b.spread_min_n
        spt = (f"{sp['spread']:.4f}: best {md_cell(evaluated_name(sp['best'], 30))} "
               f"({sp['best']['expected']:.3f}, n={sp['best']['n']}), worst "
               f"{md_cell(evaluated_name(sp['worst'], 30))} ({sp['worst']['expected']:.3f}, "
               f"n={sp['worst']['n']})"
               if sp else "–")
        lines.append(f"| {md_cell(name)} | {b.uncovered_weight:.3f} | [{_fmt(bd.get('low'))}, "
                     f"{_fmt(bd.get('high'))}] | {_fmt(b.spread)} | {spt} |")
    n_min = first.n_min
    names = _same_set(report)
    if report.get("query_sets"):
        lines += ["", md_cell(_same_set_note(report))]
    lines += ["", f"Per-stratum {measure} (strata with ≥ {n_min} queries), 95% t CI:",
              "",
              "| stratum | n | corpus mass | " + " | ".join(md_cell(n) for n in names) + " |",
              "|---|---|---|" + "---|" * len(names)]
    by = {n: {str(r["stratum"]): r for r in report["systems"][n].per_stratum} for n in names}
    for r in first.per_stratum:
        if r["n"] < n_min:
            continue
        cells = []
        for n in names:
            x = by[n].get(str(r["stratum"]))
            cells.append(f"{x['expected']:.3f} [{_fmt(x['ci_low'], 3)}, {_fmt(x['ci_high'], 3)}]"
                         if x else "–")
        lines.append(f"| {md_cell(evaluated_name(r, 60))} | {r['n']} | "
                     f"{_fmt(r['corpus_mass'])} | " + " | ".join(cells) + " |")
    for label, st in _stabilities(report):
        lines += ["", "Decision stability" + (f" ({md_cell(label)})" if label else "") + ":",
                  "", "| aggregation | winner | significant | scores |", "|---|---|---|---|"]
        for r in _stability_rows(st):
            lines.append("| " + " | ".join(md_cell(x) for x in r) + " |")
        lines.append("")
        lines.append("Order flips: " + ("; ".join(
            f"{md_cell(f['a'])} vs {md_cell(f['b'])} (" + ", ".join(
                f"{_EST_LABELS.get(a, a)}: {md_cell(w)}" for a, w in f["ahead"].items()) + ")"
            for f in st["flips"]) or "none") + ".")
    lines += ["", "## Glossary", ""]
    lines += [f"- **{md_cell(t)}**: {md_cell(d)}" for t, d in GLOSSARY]
    return "\n".join(lines) + "\n"
