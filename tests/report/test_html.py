"""The HTML report (self-contained, inline SVG plots) and its Markdown summary; real browser."""

import os
import shutil
import subprocess
import tempfile

import pytest

from mteb_stratified.report import (build_report, render_html, stability_summary,
                                    stratified_summary, to_markdown, write_html)

PLOTS = ("coverage-map", "per-stratum", "heatmaps", "ties")


@pytest.fixture(scope="module")
def report(strata, artifact, two_systems):
    summaries = {n: stratified_summary(v, strata, artifact, n_resamples=100, seed=0, n_min=2)
                 for n, v in two_systems.items()}
    return build_report(summaries, stability_summary(two_systems, strata, artifact))


def test_html_is_self_contained(report):
    text = render_html(report)
    assert text.count("<svg") >= 4
    for fig in PLOTS:
        assert f"id='{fig}'" in text
    low = text.lower()
    assert "<script" not in low and "src=\"http" not in low and "href=\"http" not in low
    assert "Decision stability" in text and "Gaps" in text


def test_markdown(report):
    md = to_markdown(report)
    assert "| cluster |" in md and "MSC" in md and "Decision stability" in md
    assert "Order flips" in md


def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def test_report_renders_in_headless_chromium(report, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium binary found (Debian: apt-get install -y chromium)")
    html = tmp_path / "report.html"
    write_html(report, html)
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--no-first-run", "--disable-dev-shm-usage",
             f"--user-data-dir={tempfile.mkdtemp(dir=tmp_path)}"]
    dom = subprocess.run(flags + ["--dump-dom", html.as_uri()], capture_output=True, text=True,
                         timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    out = dom.stdout
    assert out.count("<svg") >= 4
    for fig in PLOTS:
        assert f'id="{fig}"' in out
    shot = tmp_path / "shot.png"
    flags[-1] = f"--user-data-dir={tempfile.mkdtemp(dir=tmp_path)}"
    res = subprocess.run(flags + [f"--screenshot={shot}", "--window-size=1000,2400",
                                  html.as_uri()], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-2000:]
    assert shot.exists() and os.path.getsize(shot) > 10_000
    from PIL import Image
    img = Image.open(shot).convert("RGB")
    colors = img.getcolors(maxcolors=1 << 20)
    assert colors is not None and len(colors) > 50  # not blank: plots and text drawn
