"""The report's figures (:mod:`mteb_stratified.report.figures`): inline SVG, reproducible,
user strings drawn as plain text, nothing left behind in matplotlib's state."""

import pytest

from mteb_stratified.report.figures import (_figure, coverage_map, heatmaps, per_stratum_plot,
                                            require_matplotlib, tie_panel)
from mteb_stratified.report.prose import stratum_name

pytest.importorskip("matplotlib")


def test_a_figure_is_an_inline_svg_without_a_timestamp_and_leaves_rcparams_alone():
    matplotlib, _ = require_matplotlib()
    before = dict(matplotlib.rcParams)
    svg = _figure(lambda fig: fig.subplots().plot([0, 1], [1, 0]), (2, 2))
    assert svg.startswith("<svg") and svg.rstrip().endswith("</svg>")
    assert "<dc:date>" not in svg
    assert _figure(lambda fig: fig.subplots().plot([0, 1], [1, 0]), (2, 2)) == svg
    assert dict(matplotlib.rcParams) == before


def test_the_figures_draw_the_report_and_name_its_strata(report):
    first_name, first = next(iter(report.systems.items()))
    cov = coverage_map(first)
    assert f"MSC {first.cluster_coverage.msc:.3f}" in cov
    gaps = sorted((c for c in first.clusters if c.n_queries == 0), key=lambda c: -c.mass)
    if gaps:
        assert stratum_name(gaps[0].cluster, gaps[0].label, 30).split(" · ")[0] in cov
    plot = per_stratum_plot(report)
    assert plot.startswith("<svg") and "Per-stratum scores" in plot
    assert heatmaps(first).startswith(("<svg", "<p>"))
    ties = tie_panel(report, list(report.systems), "a query set")
    assert "Tie range" in ties and "a query set" in ties and first_name in ties


def test_a_user_string_is_drawn_as_the_plain_text_it_is(report):
    """No mathtext: ``$\\foo^$`` is not parsed (it would raise) but drawn as it is."""
    name = r"$\foo^$"
    summary = next(iter(report.systems.values()))
    from mteb_stratified.report.model import build_report

    svg = tie_panel(build_report({name: summary}))
    assert r"$\foo^$" in svg
