"""The report's words (:mod:`mteb_stratified.report.prose`): the headline, the paragraphs
and the names of systems."""

from mteb_stratified.report import to_markdown

def _paired(report):
    """The report's PairedSummary (the bundle a dict or an object with attributes)."""
    return report["pairs"] if isinstance(report, dict) else report.pairs


def _with_pair(report, pair):
    """The report with ``pair`` as its only pair (a changed copy)."""
    from dataclasses import replace

    pairs = replace(_paired(report), pairs=(pair,))
    return dict(report, pairs=pairs) if isinstance(report, dict) else replace(report,
                                                                              pairs=pairs)


def test_two_model_variants_never_share_a_plot_label():
    """The ties plot cut both MiniLM systems to one label (#33): labels keep the name's tail,
    and labels still alike are numbered."""
    from mteb_stratified.report.prose import system_labels

    names = ["mteb-stratified/all-MiniLM-L6-v2", "mteb-stratified/all-MiniLM-L6-v2-bf16", "bm25"]
    labels = system_labels(names, 30)
    assert len(set(labels)) == 3 and all(len(x) <= 30 for x in labels)
    assert labels[1].endswith("bf16") and labels[2] == "bm25"
    alike = system_labels(["x" * 20 + "a" * 30 + "y" * 10, "x" * 20 + "b" * 30 + "y" * 10], 30)
    assert len(set(alike)) == 2 and all(len(x) <= 30 for x in alike)


def test_the_headline_says_who_leads_by_how_much_and_what_could_be_seen(report):
    """#43: one sentence (leader, gap, CI, paired p, beyond chance or not, the MDE), then at
    most five short points with the ties finding among them."""
    from mteb_stratified.report.prose import headline

    from mteb_stratified.core.options import ALPHA

    head, points = headline(report)
    pair = _paired(report).pairs[0]
    o = pair.overall
    systems = report.systems
    lead = max(systems, key=lambda n: systems[n].pooled.estimate)
    assert head.startswith(f"{lead} leads ") and "paired t p = " in head
    assert f"{abs(o.mean_difference):.4f}" in head and f"{o.mde:.4f}" in head
    assert ("NOT beyond chance" in head) == (o.p_value > ALPHA)
    assert 1 <= len(points) <= 5 and points[0].startswith("Ties: ")
    assert any(p.startswith("Coverage: ") for p in points)
    from mteb_stratified.io.markdown import md_cell

    md = to_markdown(report).splitlines()
    assert md[2] == f"**{md_cell(head)}**"  # the first text after the title


def test_the_headline_bounds_the_gaps_variation_when_no_test_finds_one(report):
    """#45: with no strata test significant, the headline says how much the gap can vary
    across the topics (the REML bound); with one significant it gives the estimate and the
    bound after that verdict; the pair's paragraph and the shrunken gaps per topic are there
    either way."""
    from dataclasses import replace

    from mteb_stratified.report.prose import _any_strata_test_significant, headline
    from mteb_stratified.report.render import variation_rows
    from mteb_stratified.stratification.pairs import TopicVariation

    pair = _paired(report).pairs[0]
    v = pair.variation["topics"]
    assert v.estimable and v.n_groups >= 2 and v.tau_upper >= v.tau >= 0
    diffs = pair.stratum_differences
    qp = replace(pair, heterogeneity=replace(pair.heterogeneity, pvalue=0.5,
                                             omnibus_pvalue=0.5),
                 flips=replace(pair.flips, pvalue=0.5),
                 split_half=replace(pair.split_half, pvalue=0.5),
                 stratum_differences=replace(diffs, strata=tuple(
                     replace(r, p_adjusted=0.5) for r in diffs.strata)))
    assert not _any_strata_test_significant(qp)
    # a stratum where a − b ≠ 0 is not a gap that varies: the bound still heads the sentence
    rows = qp.stratum_differences.strata
    qp = replace(qp, stratum_differences=replace(
        diffs, strata=(replace(rows[0], p_adjusted=0.001),) + rows[1:]))
    assert not _any_strata_test_significant(qp)
    quiet = _with_pair(report, qp)
    head, _ = headline(quiet)
    assert (f"The gap varies across these {v.n_groups} topics by at most "
            f"{v.tau_upper:.3f} (95% upper bound") in head
    loud = _with_pair(report, replace(qp, heterogeneity=replace(qp.heterogeneity,
                                                                pvalue=0.01)))
    head = headline(loud)[0]
    assert "by at most" not in head
    assert (f"A strata test finds the gap varying; across these {v.n_groups} topics its SD "
            f"is {v.tau:.3f} (REML), at most {v.tau_upper:.3f}") in head
    rows = variation_rows(pair)
    assert len(rows) == v.n_groups and "shrunken toward the mean" in to_markdown(report)
    # a fit that could not be made leaves the headline as it was, and says why in the paragraph
    bare_pair = replace(qp, variation={"topics": TopicVariation(False, "1 group", None, 1)})
    assert "by at most" not in headline(_with_pair(report, bare_pair))[0]
    from mteb_stratified.report.prose import pair_paragraph
    assert "not estimable (1 group)" in pair_paragraph(bare_pair, "nDCG@10")


def test_plot_labels_drop_what_the_names_share_before_cutting():
    """The issue's ``mteb-stratified…l-MiniLM-L6-v2``: the organisation all names share goes
    first, so the MiniLM variants are shown whole."""
    from mteb_stratified.report.prose import system_labels

    names = ["mteb-stratified/all-MiniLM-L6-v2", "mteb-stratified/all-MiniLM-L6-v2-bf16-hps",
             "bm25"]
    assert system_labels(names, 30) == ["all-MiniLM-L6-v2", "all-MiniLM-L6-v2-bf16-hps", "bm25"]
    assert system_labels(["a/x", "b/x"], 30) == ["a/x", "b/x"]  # the org tells them apart
