"""The report's words: the glossary, the headline, *what this says* (the sentences and
paragraphs), the names of strata and systems, and number formatting.  Plain text: the HTML
escapes it and the Markdown quotes it (:mod:`.render`)."""

from __future__ import annotations

import math
from typing import Mapping

from ..core.options import ALPHA
from .model import ReportModel, pair_of, pairs_note, pairs_of, same_set, set_groups, stabilities, \
    value_of

__all__ = ["GLOSSARY", "EST_LABELS", "fmt", "pct", "system_labels", "stratum_name",
           "evaluated_name", "same_set_note", "variation_sentence", "headline", "mde_cell",
           "split_half_cell", "pair_paragraph", "what_this_says"]


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
                      f"shuffled): a permutation p-value ≤ {ALPHA:g}, Westfall–Young-corrected "
                      "when single strata are tested; 'A beats B in a stratum' is a sign-flip "
                      "test of the per-query differences, corrected the same way."),
)


#: The estimators' names in the report.
EST_LABELS = {"pooled": "pooled", "macro": "macro", "post_stratified": "corpus-weighted"}


def fmt(x, nd=4, *, signed: bool = False) -> str:
    """``x`` rounded to ``nd`` places (``signed``: with its sign); "–" for None; never "-0.0"."""
    if x is None:
        return "–"
    x = round(float(x), nd) + 0.0  # no "-0.0000"
    return f"{x:+.{nd}f}" if signed else f"{x:.{nd}f}"


def pct(x) -> str:
    """``x`` as a percentage with one decimal; "–" for None."""
    return "–" if x is None else f"{100 * x:.1f}%"


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


def _field(row, name: str):
    """A row's field: an attribute of a typed row (a per-stratum row, a Δ×J table, ...), or
    the key of a row kept as a mapping (a chance test's tested strata); None when absent."""
    return row.get(name) if isinstance(row, Mapping) else getattr(row, name, None)


def evaluated_name(row, width: int = 42) -> str:
    """An evaluated stratum's name: ``L5.0 (rest) · cancer / …`` (a cell adds its Δ and J).
    ``row``: anything with ``name``, ``stratum`` and ``label`` (attributes, or keys)."""
    st = _field(row, "stratum")
    head = _field(row, "name") or f"s{st}"
    if isinstance(st, (list, tuple)) and st[1] not in ("all", None):
        head += f" {st[1]} Δ {st[2]} J"
    label = _field(row, "label")
    return f"{head} · {_short(label, width)}" if label else head


def same_set_note(report) -> str:
    """The sentence saying which query set the per-stratum plot and table show."""
    names = same_set(report)
    return (f"Shown: the systems of one query set ({report.query_sets[names[0]]}: "
            f"{', '.join(names)}); systems of other query sets are not compared here.")


def _query_sets_text(report) -> str:
    """The report's first sentence when its systems were evaluated on several query sets (the
    groups of :func:`.model.set_groups`, the largest set first)."""
    groups = set_groups(report)
    return (f"Query sets: these systems were evaluated on {len(groups)} different query sets ("
            + "; ".join(f"{label}: {', '.join(names)}" for label, names in groups)
            + "). Figures of different query sets are not comparable: each system is compared "
              "only with the systems of its own set, and none is ranked across sets.")


def _ties_point(report, names) -> str:
    systems = report.systems
    parts = []
    for n in names[:3]:
        lo, hi, bias = (value_of(systems[n], v) for v in ("min", "max", "bias"))
        if lo is not None and hi is not None:
            parts.append(f"{n}: range {hi - lo:.4f}, bias {fmt(bias, signed=True)}")
    if not parts:
        return ""
    text = "Ties: the order of tied documents moves the score by (" + "; ".join(parts) + ")"
    if len(names) > 1 and all(value_of(systems[n], "oblivious") is not None for n in names):
        by_e = sorted(names, key=lambda n: (-systems[n].pooled.estimate, n))
        by_o = sorted(names, key=lambda n: (-value_of(systems[n], "oblivious"), n))
        text += ("; ranking by the stock (tie-oblivious) score WOULD DIFFER" if by_e != by_o
                 else "; ranking by the stock (tie-oblivious) score is the same")
    return text + "."


def _any_strata_test_significant(pair) -> bool:
    """True when a test of whether the pair's gap varies across strata is significant at
    :data:`~mteb_stratified.core.options.ALPHA` (:meth:`~mteb_stratified.stratification
    .PairResult.strata_vary`)."""
    return pair.strata_vary(ALPHA)


def _variation_bound_text(pair, grain: str = "topics") -> str:
    """The headline's sentence on how much the gap varies across topics ("" when there is no
    estimable fit): its bound first when no strata test is significant ("varies … by at most
    0.052"), the estimate and the bound after the strata verdict when one is."""
    v = pair.variation.get(grain)
    if v is None or not v.estimable or v.tau_upper is None:
        return ""
    if v.degenerate:
        return (f" The gap is the same on every query: it does not vary across these "
                f"{v.n_groups} {grain} (a degenerate fit, bound 0).")
    if not _any_strata_test_significant(pair):
        return (f" The gap varies across these {v.n_groups} {grain} by at most "
                f"{v.tau_upper:.3f} (95% upper bound on its between-{grain[:-1]} SD; REML "
                f"estimate {v.tau:.3f}).")
    return (f" A strata test finds the gap varying; across these {v.n_groups} {grain} its "
            f"SD is {v.tau:.3f} (REML), at most {v.tau_upper:.3f} (95% upper bound).")


def variation_sentence(pair, grain: str = "topics") -> str:
    """The pair's τ in words, estimable or not (for the pair's paragraph)."""
    v = pair.variation.get(grain)
    if v is None:
        return ""
    if not v.estimable:
        return f" How much the gap varies across {grain}: not estimable ({v.why})."
    if v.degenerate:
        return f" {v.note}."
    bound = ("no finite upper bound" if v.tau_upper is None
             else f"at most {v.tau_upper:.3f} (95% upper bound)")
    return (f" Across the {v.n_groups} {grain} the gap's SD (τ, REML random intercept) is "
            f"{v.tau:.3f}, {bound}; the shrunken gap per {grain[:-1]} is tabled below.")


def headline(report) -> tuple[str, list[str]]:
    """The report's top: one sentence (who leads, by how much, whether beyond chance, and the
    smallest gap these queries could see: the paired t test's MDE at 80% power; then how much
    the gap can vary across the topics, :func:`_variation_bound_text`) and at most
    five short points (ties, the corpus-weighted view, the strata, coverage, other query
    sets).  Of the largest query set; other sets are named, never compared."""
    groups = set_groups(report)
    label, names = groups[0]
    systems = report.systems
    first = systems[names[0]]
    measure = first.measure
    on = f"{first.n_queries} queries" + (f" ({label})" if label else "")
    by = sorted(names, key=lambda n: (-systems[n].pooled.estimate, n))
    pair = pair_of(report, by[0], by[1]) if len(by) > 1 else None
    if len(by) < 2:
        e = systems[by[0]].pooled
        head = (f"{by[0]} scores {e.estimate:.4f} in {measure} (expected over tie orders, 95% "
                f"CI [{fmt(e.ci_low)}, {fmt(e.ci_high)}]) on {on}; one system, so nothing "
                "is compared.")
    elif pair is None:
        gap = systems[by[0]].pooled.estimate - systems[by[1]].pooled.estimate
        head = (f"{by[0]} leads {by[1]} by {gap:.4f} in {measure} (expected) on {on}; no paired "
                "test was run.")
    else:
        o = pair.overall
        sign = 1 if pair.a == by[0] else -1
        gap, lo, hi = (sign * x for x in (o.mean_difference, o.ci_low, o.ci_high))
        lead, other = (by[0], by[1]) if gap >= 0 else (by[1], by[0])
        if gap < 0:
            gap, lo, hi = -gap, -hi, -lo
        lo, hi = min(lo, hi), max(lo, hi)
        others = f" (and {len(by) - 2} more)" if len(by) > 2 else ""
        verdict = ("beyond chance" if o.p_value <= ALPHA else
                   "NOT beyond chance: these queries do not settle which is better")
        head = (f"{lead} leads {other}{others} by {gap:.4f} in {measure} (expected) on {on}, "
                f"95% CI [{fmt(lo, signed=True)}, {fmt(hi, signed=True)}], paired t p = "
                f"{o.p_value:.3f}: {verdict}. The smallest gap these queries would detect "
                f"8 times in 10 is {o.mde:.4f}.")
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
    if pair is not None and pair.tested:
        h = pair.heterogeneity
        n_strata = len(pair.stratum_differences.strata)
        points.append(f"Strata: the gap {'varies' if h.significant(ALPHA) else 'does not vary'}"
                      f" across the {n_strata} evaluated strata more than across random strata "
                      f"of the same sizes (permutation p = {h.p_value:.3f}).")
    elif first.heterogeneity is not None:
        h = first.heterogeneity
        points.append(f"Strata: {names[0]}'s {len(h.strata)} evaluated strata "
                      f"{'differ' if h.pvalue <= ALPHA else 'do not differ'} more than random "
                      f"strata of the same sizes (permutation p = {h.pvalue:.3f}).")
    cov = first.cluster_coverage
    points.append(f"Coverage: {cov.covered} of {cov.weighted_units} leaves hold a query "
                  f"(MSC {cov.msc:.3f}); {pct(cov.uncovered_mass)} of the corpus lies where no "
                  "query reaches.")
    if len(groups) > 1:
        points.append(f"{len(groups) - 1} other query set(s), reported apart below and never "
                      "compared with these: " + "; ".join(
                          f"{lab}: {', '.join(ns)}" for lab, ns in groups[1:]) + ".")
    return head, points[:5]


def _has_split_half(sh) -> bool:
    """A split-half result whose r, null r and p-value are all finite."""
    return sh is not None and all(math.isfinite(x) for x in (sh.r, sh.null_r, sh.pvalue))


def _power(power):
    """A minimum detectable effect as a :class:`~mteb_stratified.stratification
    .DetectableEffect` (a summary's is its read-only JSON form), or None."""
    from ..stratification.power import DetectableEffect

    return DetectableEffect.of(power)


def mde_cell(power) -> str:
    """The MDE table cell: the minimum detectable effect at 20% / 10% of the queries."""
    power = _power(power)
    if not power:
        return "–"
    return " / ".join("–" if power.mde.get(k) is None else f"{power.mde.get(k):.3f}"
                      for k in ("0.2", "0.1"))


def split_half_cell(sh) -> str:
    """The split-half table cell: r (random strata's r), p; "–" when not finite."""
    if not _has_split_half(sh):
        return "–"
    return f"{sh.r:.2f} ({sh.null_r:.2f}), p = {sh.pvalue:.3f}"


def _mde_text(power, measure: str, n_queries: int) -> str:
    """"With these 323 queries, a stratum gap smaller than 0.12 in nDCG@10 …" (or nothing)."""
    power = _power(power)
    if not power:
        return ""
    m20, m10 = power.mde.get("0.2"), power.mde.get("0.1")
    if m20 is None and all(v is None for v in power.power.get("0.2", {}).values()):
        text = (f" No set of these strata holds 20% of the {n_queries} queries, so no stratum "
                "gap of that size could be planted to measure what the tests can see")
    elif m20 is None:
        text = (f" With these {n_queries} queries not even a gap of {power.grid[-1]:.2f} in "
                f"{measure} in strata holding 20% of the queries would be seen 8 times in 10")
    else:
        text = (f" With these {n_queries} queries, a stratum gap smaller than {m20:.2f} in "
                f"{measure} (in strata holding 20% of the queries) cannot be seen 8 times in 10")
    if m10 is not None:
        text += f"; at 10% of the queries, one smaller than {m10:.2f}"
    elif power.power.get("0.1") and all(v is None for v in power.power.get("0.1").values()):
        text += "; no set of these strata holds only 10% of the queries"
    return text + "."


def pair_paragraph(pair, measure: str) -> str:
    """The paragraph on one pair: overall gap, strata where one wins, whether the gap
    varies across strata, the MDE and how much it varies across topics."""
    a, b = pair.a, pair.b
    o = pair.overall
    text = (f"Where does {a} beat {b}? Over the {pair.n_queries} shared queries, {a} − {b} "
            f"= {o.mean_difference:+.4f} in {measure} (95% CI [{o.ci_low:+.4f}, "
            f"{o.ci_high:+.4f}], paired t p = {o.p_value:.3f}).")
    if not pair.tested:
        return (text + f" The strata are not compared: {pair.why}."
                + variation_sentence(pair))
    wins = pair.stratum_differences.winners()
    n_strata = len(pair.stratum_differences.strata)
    if wins:
        text += (" Beyond chance (sign-flip test per stratum, Westfall–Young over the "
                 f"{n_strata} strata): " + "; ".join(
                     f"{r.winner} wins in {evaluated_name(r, 40)} ({r.mean_difference:+.3f}"
                     f", n = {r.n}, adjusted p = {r.p_adjusted:.3f})" for r in wins[:5])
                 + ".")
    else:
        text += (f" In none of the {n_strata} strata does either system win beyond chance "
                 "(sign-flip test per stratum, Westfall–Young).")
    h = pair.heterogeneity
    apart = h.deviating_strata(ALPHA)
    if h.significant(ALPHA):
        text += (f" The gap varies across strata more than across random strata of the same "
                 f"sizes (max-|z| permutation p = {h.p_value:.3f}; omnibus p = "
                 f"{h.omnibus_p_value:.3f})")
        text += (": " + "; ".join(f"{evaluated_name(r, 40)} ({r.mean:+.3f})" for r in apart[:5])
                 + " stands apart." if apart else ".")
    else:
        text += (f" The gap does not vary across strata more than across random strata of the "
                 f"same sizes (max-|z| permutation p = {h.p_value:.3f}; omnibus p = "
                 f"{h.omnibus_p_value:.3f}).")
    return (text + _mde_text(pair.power, measure, pair.n_queries)
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
        n = rows[0][1].generated.n_queries
        out.append(f"Generated queries: {n} of this split's queries are generated; they are "
                   "left out of every estimate and test here and reported apart: " + "; ".join(
                       f"{name} {g.generated.estimate:.3f} on them"
                       + ("" if g.generated.ci_low is None else
                          f" (95% CI [{g.generated.ci_low:.3f}, "
                          f"{g.generated.ci_high:.3f}])")
                       + f" against {g.original.estimate:.3f} on the "
                       f"{g.original.n_queries} original queries" for name, g in rows)
                   + f" ({measure}, pooled).")
    return out


def what_this_says(report: ReportModel) -> list[str]:
    """Plain-word paragraphs, the paired question first, then coverage gaps, differences
    beyond chance, J against lexical overlap and ranking stability."""
    systems = report.systems
    first_name, first = next(iter(systems.items()))
    measure = first.measure
    cov = first.cluster_coverage
    n_min = first.n_min
    out = [_query_sets_text(report)] if report.query_sets else []
    note = pairs_note(report)
    for pair in pairs_of(report):
        out.append(pair_paragraph(pair, measure))
    out += _origin_paragraphs(systems, measure)
    if len(systems) < 2 or note:
        out.append("Paired tests: " + (note or "one system only: the paired "
                                       "tests need two or more systems on the same queries")
                   + ".")
    g = first.grain
    if g:
        out.append(f"Strata: {g.n_strata} evaluated strata of at least {g.min_queries} "
                   f"queries each, from levels {', '.join(str(x) for x in g.levels)} of the "
                   f"cluster tree ({g.why}); coverage below counts the leaves (the finest "
                   "clusters).")
    weightless = (f" ({cov.weightless} more are no document's own stratum, carry no weight "
                  "and are left out)" if cov.weightless else "")
    text = (f"Coverage: {cov.covered} of {cov.weighted_units} leaves hold at least one "
            f"query{weightless} (MSC {cov.msc:.3f}); leaves with at least {n_min} queries "
            f"hold {pct(cov.scc)} of the corpus mass (SCC), and {pct(cov.uncovered_mass)} "
            "of the corpus mass lies in leaves no query reaches")
    gaps = first.gaps[:3]
    if gaps:
        text += (" (the largest: " + "; ".join(f"“{_short(g.label, 50)}”, "
                                                 f"{pct(g.mass)}" for g in gaps) + ")")
    bd = first.bounds
    text += "."
    if bd and cov.uncovered_mass:
        text += (f" No query measures the systems there: with {measure} 0 or 1 on every "
                 f"uncovered cluster, the corpus-weighted mean of {first_name} could be "
                 f"anywhere in [{bd.low:.3f}, {bd.high:.3f}].")
    out.append(text)
    for name, b in systems.items():
        h = b.heterogeneity
        if h is None:
            continue
        beyond = h.significant(ALPHA)
        text = (f"{name}: the strata explain {pct(h.eta_squared)} of the per-query "
                f"variance of {measure}; random strata of the same sizes explain "
                f"{pct(h.null_eta_squared)} on average (95% of them up to "
                f"{pct(h.null_eta_squared_95)}); permutation p = {h.pvalue:.3f}, so "
                + ("the strata differ beyond chance." if beyond else
                   "there is no evidence that the strata differ more than random strata of "
                   "the same sizes would."))
        sh = b.split_half
        if _has_split_half(sh):
            text += (f" Split in two random halves ({sh.n_splits} splits, averaged), the "
                     f"stratum means agree at r = {sh.r:.2f} (random strata: {sh.null_r:.2f}; p = "
                     f"{sh.pvalue:.3f}): " + ("they replicate beyond chance." if
                                              sh.pvalue <= ALPHA else
                                                  "they do not replicate beyond chance."))
        diff = h.differing_strata(ALPHA)
        tested = len(h.strata)
        if diff:
            text += (f" Of the {tested} strata with ≥ {h.min_size} queries, "
                     f"{len(diff)} differ from the rest beyond chance (Westfall–Young): "
                     + "; ".join(f"{evaluated_name(r, 40)} (mean {r.mean:.3f}, n = "
                                 f"{r.n})" for r in diff[:5]) + ".")
        elif tested:
            text += (f" None of the {tested} strata with ≥ {h.min_size} queries differs "
                     "from the rest beyond chance (Westfall–Young): these queries cannot "
                     "single out a stratum as harder or easier.")
        text += _mde_text(b.power, measure, b.n_queries)
        out.append(text)
    lex = first.alignment_vs_lexical
    if lex:
        out.append(f"J against lexical overlap ({next(iter(systems))}): {lex.verdict}.")
    for label, st in stabilities(report):
        out.append(_ranking_text(st, "Ranking" + (f" ({label})" if label else "")))
    if not stabilities(report):
        out.append("Ranking: " + ("no two systems share a query set" if report.query_sets
                                  else "one system only") + ", so there is no ranking to check.")
    return out


def _ranking_text(st, head: str) -> str:
    """Who leads under each aggregation, and whether the lead is significant."""
    labels = EST_LABELS
    winners = st.winners
    sig = st.winner_significant
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
