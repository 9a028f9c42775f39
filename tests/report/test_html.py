"""The HTML report (self-contained, inline SVG plots) and its Markdown summary; real browser."""

import os
import subprocess

import pytest

from mteb_stratified.report import build_report, render_html, to_markdown, write_html
from mteb_stratified.stratification import paired_summary, stability_summary, stratified_summary

from ._browser import chromium, chromium_flags

PLOTS = ("coverage-map", "per-stratum", "heatmaps", "ties")


@pytest.fixture(scope="module")
def report(strata, artifact, two_systems):
    # 40 queries: strata of ≥ 10 so that several are compared (the default 50 gives one)
    summaries = {n: stratified_summary(v, strata, artifact, n_resamples=100, seed=0, n_min=2,
                                       min_queries=10)
                 for n, v in two_systems.items()}
    return build_report(summaries,
                        stability_summary(two_systems, strata, artifact, min_queries=10),
                        paired_summary(two_systems, strata, artifact, n_min=2, min_queries=10,
                                       n_resamples=100))


def test_html_is_self_contained(report):
    text = render_html(report)
    assert text.count("<svg") >= 4
    for fig in PLOTS:
        assert f"id='{fig}'" in text
    low = text.lower()
    assert "<script" not in low and "src=\"http" not in low and "href=\"http" not in low
    assert "Decision stability" in text and "Gaps" in text
    assert "Where does A beat B?" in text and "id='pairs'" in text


def test_markdown(report):
    md = to_markdown(report)
    assert "| cluster |" in md and "MSC" in md and "Decision stability" in md
    assert "Order flips" in md


PROBE = open(os.path.join(os.path.dirname(__file__), "layout_probe.js")).read()


def _layout(html_text, tmp_path, width=1400):
    """Render in headless Chromium at ``width`` px with the layout probe appended; return the
    probe's findings (text of every figure, overlapping text boxes, horizontal overflow) and
    the DOM."""
    import html as html_lib
    import json
    import re

    probe = tmp_path / "probe.html"
    probe.write_text(html_text.replace("</body>", f"<script>{PROBE}</script></body>"),
                     encoding="utf-8")
    dom = subprocess.run(chromium_flags(chromium(), tmp_path, width)
                         + ["--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'<pre id="layout-check">(.*?)</pre>', dom.stdout, re.S)
    assert m, dom.stdout[-2000:]
    return json.loads(html_lib.unescape(m.group(1))), dom.stdout


def test_layout_probe_detects_overlap(tmp_path):
    """The overlap check can fail: two texts drawn on the same spot are reported."""
    page = ("<!DOCTYPE html><html><body><figure id='f'><svg width='300' height='50'>"
            "<text x='10' y='20'>AAAAAA</text><text x='14' y='22'>BBBBBB</text>"
            "<text x='200' y='40'>CC</text></svg></figure></body></html>")
    found, _ = _layout(page, tmp_path)
    assert [o[:3] for o in found["overlaps"]] == [["f", "AAAAAA", "BBBBBB"]]


def test_report_renders_in_headless_chromium(report, tmp_path):
    """Every figure and every stratum label is drawn, no two texts overlap and nothing runs
    off the page at 1400 px; a screenshot is saved."""
    from mteb_stratified.report.html import evaluated_name

    text = render_html(report)
    found, dom = _layout(text, tmp_path)
    assert set(PLOTS) <= set(found["figures"])
    assert found["overlaps"] == [], found["overlaps"][:10]
    assert found["outside"] == [], found["outside"][:10]
    assert found["scrollWidth"] <= 1400
    first = next(iter(report["systems"].values())).to_dict()
    n_min = first["settings"]["n_min"]
    drawn = " ".join(found["figures"]["per-stratum"])
    for r in first["per_stratum"][:25]:
        if r["n"] >= n_min:
            assert evaluated_name(r) in drawn  # labelled, not numbered
    heat = " ".join(found["figures"]["heatmaps"])
    for c in [c for c in first["cells"] if c["n_queries"] >= n_min][:6]:
        assert f"{c['name']} ·" in heat
    for section in ("setup", "what-this-says", "pairs", "glossary", "coverage", "chance",
                    "stability"):
        assert f'id="{section}"' in dom
    for term in ("MSC", "SCC", "Δ (dispersion)", "J (alignment)", "macro",
                 "corpus-weighted (post-stratified)"):
        assert f"<dt>{term}</dt>" in dom
    html = tmp_path / "report.html"
    write_html(report, html)
    shot = tmp_path / "report.png"
    res = subprocess.run(chromium_flags(chromium(), tmp_path, 1400, 5200)
                         + [f"--screenshot={shot}", html.as_uri()],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert shot.exists() and os.path.getsize(shot) > 10_000
    from PIL import Image
    img = Image.open(shot).convert("RGB")
    colors = img.getcolors(maxcolors=1 << 20)
    assert colors is not None and len(colors) > 50  # not blank: plots and text drawn
    print(f"screenshot: {shot}")


def test_hostile_system_names_are_inert(strata, artifact, two_systems, tmp_path):
    """System names with HTML/JS payloads (and mathtext) render as text: no element, no
    script, no matplotlib parse error."""
    payloads = ['"><img src=x onerror=alert(1)>', "<script>alert(2)</script>", r"$\foo^$"]
    values = list(two_systems.values())
    systems = {name: values[i % 2] for i, name in enumerate(payloads)}
    summaries = {n: stratified_summary(v, strata, artifact, n_resamples=50, seed=0, n_min=2,
                                       min_queries=10, power=False)
                 for n, v in systems.items()}
    rep = build_report(summaries, stability_summary(systems, strata, artifact, min_queries=10),
                       paired_summary(systems, strata, artifact, n_min=2, min_queries=10,
                                      n_resamples=50, power=False),
                       title="<b>t</b>")
    text = render_html(rep)
    found, dom = _layout(text, tmp_path)
    assert "<img" not in dom and dom.count("<script") == 1  # only the layout probe
    assert "<b>t</b>" not in dom and "&lt;b&gt;t&lt;/b&gt;" in dom
    assert '"&gt;&lt;img src=x onerror=alert(1)&gt;' in dom
    assert any(r"$\foo^$" in t for t in found["figures"]["ties"])  # drawn as plain text
    md = to_markdown(rep)
    assert "<script>" not in md and "<img" not in md


def test_the_same_report_renders_to_the_same_bytes(report):
    """No timestamp in the inline SVGs (matplotlib writes one unless told not to): a report of
    the same results is byte-identical, so it can be diffed and checked in."""
    first = render_html(report)
    assert "<dc:date>" not in first
    assert render_html(report) == first


def test_two_model_variants_never_share_a_plot_label():
    """The ties plot cut both MiniLM systems to one label (#33): labels keep the name's tail,
    and labels still alike are numbered."""
    from mteb_stratified.report.html import system_labels

    names = ["mteb-stratified/all-MiniLM-L6-v2", "mteb-stratified/all-MiniLM-L6-v2-bf16", "bm25"]
    labels = system_labels(names, 30)
    assert len(set(labels)) == 3 and all(len(x) <= 30 for x in labels)
    assert labels[1].endswith("bf16") and labels[2] == "bm25"
    alike = system_labels(["x" * 20 + "a" * 30 + "y" * 10, "x" * 20 + "b" * 30 + "y" * 10], 30)
    assert len(set(alike)) == 2 and all(len(x) <= 30 for x in alike)


def test_the_headline_says_who_leads_by_how_much_and_what_could_be_seen(report):
    """#43: one sentence (leader, gap, CI, paired p, beyond chance or not, the MDE), then at
    most five short points with the ties finding among them."""
    from mteb_stratified.report.html import headline

    head, points = headline(report)
    pair = report["pairs"]["pairs"][0]
    o = pair["overall"]
    systems = report["systems"]
    lead = max(systems, key=lambda n: systems[n].pooled.estimate)
    assert head.startswith(f"{lead} leads ") and "paired t p = " in head
    assert f"{abs(o['mean_difference']):.4f}" in head and f"{o['mde']:.4f}" in head
    assert ("NOT beyond chance" in head) == (o["p_value"] > 0.05)
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
    import copy

    from mteb_stratified.report.html import (_any_strata_test_significant, headline,
                                             variation_rows)

    pair = report["pairs"]["pairs"][0]
    v = pair["variation"]["topics"]
    assert v["estimable"] and v["n_groups"] >= 2 and v["tau_upper"] >= v["tau"] >= 0
    quiet = dict(report, pairs=copy.deepcopy(report["pairs"]))
    qp = quiet["pairs"]["pairs"][0]
    qp["heterogeneity"]["p_value"] = qp["heterogeneity"]["omnibus_p_value"] = 0.5
    qp["flips"]["p_value"] = qp["split_half"]["p_value"] = 0.5
    for r in qp["stratum_differences"]["strata"]:
        r["p_adjusted"] = 0.5
    assert not _any_strata_test_significant(qp)
    # a stratum where a − b ≠ 0 is not a gap that varies: the bound still heads the sentence
    qp["stratum_differences"]["strata"][0]["p_adjusted"] = 0.001
    assert not _any_strata_test_significant(qp)
    head, _ = headline(quiet)
    assert (f"The gap varies across these {v['n_groups']} topics by at most "
            f"{v['tau_upper']:.3f} (95% upper bound") in head
    loud = dict(quiet, pairs=copy.deepcopy(quiet["pairs"]))
    loud["pairs"]["pairs"][0]["heterogeneity"]["p_value"] = 0.01
    head = headline(loud)[0]
    assert "by at most" not in head
    assert (f"A strata test finds the gap varying; across these {v['n_groups']} topics its SD "
            f"is {v['tau']:.3f} (REML), at most {v['tau_upper']:.3f}") in head
    rows = variation_rows(pair)
    assert len(rows) == v["n_groups"] and "shrunken toward the mean" in to_markdown(report)
    # a fit that could not be made leaves the headline as it was, and says why in the paragraph
    bare = dict(quiet, pairs=copy.deepcopy(quiet["pairs"]))
    bare["pairs"]["pairs"][0]["variation"]["topics"] = {"estimable": False, "why": "1 group"}
    assert "by at most" not in headline(bare)[0]
    from mteb_stratified.report.html import _pair_paragraph
    assert "not estimable (1 group)" in _pair_paragraph(bare["pairs"]["pairs"][0], "nDCG@10")


_FIRST_TEXT = """
<script>
const lines = document.body.innerText.split('\\n').map(s => s.trim()).filter(Boolean);
const pre = document.createElement('pre'); pre.id = 'first-text';
pre.textContent = JSON.stringify(lines.slice(0, 3)); document.body.appendChild(pre);
</script>"""


def test_the_headline_is_the_first_text_after_the_title_in_a_browser(report, tmp_path):
    """What a reader sees first, as Chromium lays the page out: the title, then the headline
    sentence, then the first key point (ties)."""
    import html as html_lib
    import json
    import re

    from mteb_stratified.report.html import headline

    page = tmp_path / "top.html"
    page.write_text(render_html(report).replace("</body>", _FIRST_TEXT + "</body>"),
                    encoding="utf-8")
    dom = subprocess.run(chromium_flags(chromium(), tmp_path) + ["--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'<pre id="first-text">(.*?)</pre>', dom.stdout, re.S)
    assert m, dom.stdout[-2000:]
    title, first, second = json.loads(html_lib.unescape(m.group(1)))
    head, points = headline(report)
    assert title == report["title"] and first == head and second == points[0]


def test_plot_labels_drop_what_the_names_share_before_cutting():
    """The issue's ``mteb-stratified…l-MiniLM-L6-v2``: the organisation all names share goes
    first, so the MiniLM variants are shown whole."""
    from mteb_stratified.report.html import system_labels

    names = ["mteb-stratified/all-MiniLM-L6-v2", "mteb-stratified/all-MiniLM-L6-v2-bf16-hps",
             "bm25"]
    assert system_labels(names, 30) == ["all-MiniLM-L6-v2", "all-MiniLM-L6-v2-bf16-hps", "bm25"]
    assert system_labels(["a/x", "b/x"], 30) == ["a/x", "b/x"]  # the org tells them apart
