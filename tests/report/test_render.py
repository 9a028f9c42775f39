"""The HTML report (self-contained, inline SVG plots) and its Markdown summary
(:mod:`mteb_stratified.report.render`), checked in a real browser."""

import os
import subprocess

from mteb_stratified.report import build_report, render_html, to_markdown, write_html
from mteb_stratified.stratification import paired_summary, stability_summary, stratified_summary

from ._browser import chromium, chromium_flags

PLOTS = ("coverage-map", "per-stratum", "heatmaps", "ties")


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
    from mteb_stratified.report.prose import evaluated_name

    text = render_html(report)
    found, dom = _layout(text, tmp_path)
    assert set(PLOTS) <= set(found["figures"])
    assert found["overlaps"] == [], found["overlaps"][:10]
    assert found["outside"] == [], found["outside"][:10]
    assert found["scrollWidth"] <= 1400
    first = next(iter(report.systems.values())).to_dict()
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

    from mteb_stratified.report.prose import headline

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
    assert title == report.title and first == head and second == points[0]
