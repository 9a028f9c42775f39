"""Hostile strings in the report (system names, cluster labels, task name in the title,
measure, warnings): escaped in the HTML, inert in a real browser, plain text in the plots."""

import html as html_lib
import json
import os
import re
import subprocess

import pytest

from mteb_stratified.report import build_report, render_html, to_markdown
from mteb_stratified.stratification import paired_summary, stability_summary, stratified_summary

from ._browser import chromium, chromium_flags

#: System names: each would set document.title or window.__xss if it ever ran.
SYSTEMS = (
    '"><img src=x onerror="document.title=\'XSS\';window.__xss=1">',
    "<script>document.title='XSS';window.__xss=2</script>",
    "</script><script>window.__xss=3</script>",
    '<svg onload="window.__xss=4"></svg>',
    "javascript:window.__xss=5",
    r"$\foo^$",
    "![x](http://attacker.test/p.png)",
    "[click](javascript:window.__xss=10) *em* `code`",
)
LABEL = "<img src=x onerror=window.__xss=6> $x_1$ & tumor"
TITLE = "StratifiedNFCorpus <script>window.__xss=7</script>"
MEASURE_TAIL = "<b onmouseover=window.__xss=8>"
WARNING = "</p><iframe src=javascript:window.__xss=9>"
PROBE = open(os.path.join(os.path.dirname(__file__), "xss_probe.js")).read()


def _relabel(node):
    """Every cluster label in a strata block becomes the hostile label."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "label":
                node[k] = LABEL
            else:
                _relabel(v)
    elif isinstance(node, list):
        for v in node:
            _relabel(v)


def _hostile(summary):
    """The summary with every cluster label, the measure, the warnings and the bins' source
    hostile (a summary is immutable: a changed copy)."""
    from dataclasses import replace

    from mteb_stratified.core.stats.coverage import Gap
    from mteb_stratified.core.stats.strata import Bins

    from mteb_stratified.stratification import StratifiedSummary

    block = summary.to_dict()
    _relabel(block)
    relabelled = StratifiedSummary.from_dict(block)  # the typed rows, hostile
    cov = summary.cluster_coverage
    return replace(
        summary, measure=summary.measure + MEASURE_TAIL, warnings=[WARNING],
        bins=Bins(summary.bins.dispersion, summary.bins.alignment, LABEL),
        **{k: getattr(relabelled, k) for k in ("grain", "per_stratum", "clusters", "cells",
                                               "spread_min_n", "heterogeneity")},
        cluster_coverage=replace(cov, gaps=tuple(Gap(g.stratum, g.mass, LABEL)
                                                 for g in cov.gaps)))


@pytest.fixture(scope="module")
def hostile(strata, artifact, two_systems):
    values = list(two_systems.values())
    systems = {name: values[i % 2] for i, name in enumerate(SYSTEMS)}
    summaries = {n: stratified_summary(v, strata, artifact, n_resamples=20, seed=0, n_min=2,
                                       min_queries=10, power=False)
                 for n, v in systems.items()}
    summaries = {n: _hostile(summary) for n, summary in summaries.items()}
    from dataclasses import replace

    from mteb_stratified.core.stats.stability import Flip
    from mteb_stratified.stratification import PairedSummary

    stability = stability_summary(systems, strata, artifact, min_queries=10)
    flip = Flip(SYSTEMS[0], SYSTEMS[1], {"pooled": SYSTEMS[0], "macro": SYSTEMS[1]},
                {"pooled": True, "macro": False})
    stability = replace(stability, flips=(flip,))  # the "Flips" line
    pairs = paired_summary({n: systems[n] for n in SYSTEMS[:3]}, strata, artifact, n_min=2,
                           min_queries=10, n_resamples=20, power=False)
    assert pairs.pairs and all(p.tested for p in pairs.pairs)
    block = pairs.to_dict()
    _relabel(block)
    return build_report(summaries, stability, PairedSummary.from_dict(block), title=TITLE)


def _tags(text):
    """``[(tag, attribute names)]`` of every element an HTML parser sees in ``text``."""
    from html.parser import HTMLParser

    found = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, [name for name, _ in attrs]))

    Tags().feed(text)
    return found


def test_every_hostile_string_is_escaped(hostile):
    """No payload survives unescaped anywhere in the HTML; each appears in escaped form; no
    script, no link, no event handler of ours."""
    text = render_html(hostile)
    for payload in (*SYSTEMS, LABEL, TITLE, MEASURE_TAIL, WARNING):
        if re.search(r"[<>&\"']", payload):
            assert payload not in text, payload
            assert html_lib.escape(payload, quote=True) in text or \
                html_lib.escape(payload, quote=False) in text, payload
    tags = _tags(text)
    assert not {t for t, _ in tags} & {"script", "img", "iframe", "a", "object", "embed"}
    attrs = {a for _, names in tags for a in names}
    assert not {a for a in attrs if a.startswith("on")} and not attrs & {"href", "src"}
    md = to_markdown(hostile)
    for tag in ("<script", "<img", "<svg", "<b ", "<iframe"):
        assert tag not in md
    # no Markdown image, link, emphasis or code span from a name: its syntax is escaped
    assert "![x](" not in md and "[click](" not in md and " *em* " not in md
    assert "\\!\\[x\\](http://attacker.test/p.png)" in md and "\\*em\\*" in md


def test_hostile_strings_are_inert_in_chromium(hostile, tmp_path):
    """In a real browser no payload runs (title, global flag), no element they name exists,
    and they are shown as the text they are, in the tables and in the plots."""
    page = tmp_path / "hostile.html"
    page.write_text(render_html(hostile).replace("</body>", f"<script>{PROBE}</script></body>"),
                    encoding="utf-8")
    dom = subprocess.run(chromium_flags(chromium(), tmp_path)
                         + ["--virtual-time-budget=3000", "--dump-dom", page.as_uri()],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    m = re.search(r'<pre id="xss-check">(.*?)</pre>', dom.stdout, re.S)
    assert m, dom.stdout[-2000:]
    found = json.loads(html_lib.unescape(m.group(1)))
    assert found["flag"] is None and found["title"] == TITLE
    assert found["scripts"] == 1 and found["images"] == 0 and found["handlers"] == []
    for payload in (*SYSTEMS, LABEL, WARNING):
        assert payload in found["text"], payload  # shown as text
    drawn = " ".join(found["svgText"])
    assert r"$\foo^$" in drawn and "$x_1$ & tumor" in drawn  # no mathtext in the plots
    assert MEASURE_TAIL in drawn
