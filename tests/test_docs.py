"""The docs site (``docs/``, ``mkdocs.yml``) and the README that points into it.

* the README stays short (≤ 250 lines): what it is, the set-up, the quick start, the MTEB
  commands and links; everything else lives in the docs;
* every page of ``mkdocs.yml``'s ``nav`` exists, and every ``docs/**/*.md`` is in the nav;
* every relative link in README.md and docs/**/*.md points to a file that exists (a figure the
  build hook serves from ``benchmarks/results/`` counts when its source exists);
* ``mkdocs build --strict`` passes (slow: it renders the API reference). It FAILS when mkdocs
  is missing: install the ``[docs]`` extra.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
MAX_README_LINES = 250
_LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _nav_pages(nav) -> list[str]:
    """Every page path of a mkdocs nav (strings at any depth)."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_pages(item)]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_pages(value)]
    return []


def _config() -> dict:
    import yaml  # installed with mkdocs (the [docs] extra)

    return yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))


def _served_figures() -> dict:
    """docs path -> repository path of the figures the build hook serves."""
    spec = importlib.util.spec_from_file_location("cli_reference_hook",
                                                  DOCS / "hooks" / "cli_reference.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    return dict(hook.FIGURES)


def _prose(text: str) -> str:
    """``text`` without fenced code blocks and inline code (links there are not links)."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def relative_links(text: str) -> list[str]:
    out = []
    for target in _LINK.findall(_prose(text)):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith(("#", "/")):
            continue  # a URL, mailto:, an anchor on the same page, or an absolute path
        out.append(target.split("#", 1)[0].split("?", 1)[0])
    return out


def _markdown_files() -> list[Path]:
    return [REPO / "README.md", *sorted(DOCS.rglob("*.md"))]


def test_readme_is_short():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, (
        f"README.md has {len(lines)} lines (at most {MAX_README_LINES}): "
        "move the detail into docs/")


def test_every_nav_page_exists_and_every_page_is_in_the_nav():
    config = _config()
    assert config.get("docs_dir", "docs") == "docs"
    nav = _nav_pages(config["nav"])
    missing = [p for p in nav if not (DOCS / p).is_file()]
    assert not missing, f"in mkdocs.yml's nav but not in docs/: {missing}"
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert pages, "docs/ holds no page"
    left_out = sorted(pages - set(nav))
    assert not left_out, f"docs pages missing from mkdocs.yml's nav: {left_out}"
    assert len(nav) == len(set(nav)), "a page is listed twice in the nav"


def test_relative_links_point_to_existing_files():
    served = _served_figures()
    for source in served.values():
        assert (REPO / source).is_file(), f"the hook serves {source}, which does not exist"
    broken = []
    for md in _markdown_files():
        for target in relative_links(md.read_text(encoding="utf-8")):
            if not target:
                continue
            path = (md.parent / target).resolve()
            if path.exists():
                continue
            try:
                in_docs = path.relative_to(DOCS.resolve()).as_posix()
            except ValueError:
                in_docs = None
            if in_docs in served:
                continue
            broken.append(f"{md.relative_to(REPO)}: {target}")
    assert not broken, "relative links to missing files:\n" + "\n".join(broken)


def test_link_finder_sees_links_and_skips_code():
    text = ("See [a](docs/a.md#x), ![img](img/b.png \"t\") and [web](https://x.org).\n"
            "`[not](c.md)`\n```text\n[not](d.md)\n```\n[anchor](#here)\n")
    assert relative_links(text) == ["docs/a.md", "img/b.png"]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The docs site, built once with ``mkdocs build --strict`` (a warning fails it)."""
    out = tmp_path_factory.mktemp("docs") / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
         "-f", str(REPO / "mkdocs.yml"), "-d", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, (
        f"mkdocs build --strict failed (exit {proc.returncode}; install the docs extra with "
        f"pip install '.[docs]' if mkdocs is missing):\n"
        f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return out


@pytest.mark.slow
def test_mkdocs_build_strict(site):
    """The site builds with no warning. Without mkdocs this fails: pip install '.[docs]'."""
    assert (site / "index.html").is_file()
    assert (site / "reference" / "cli" / "index.html").is_file()
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "precision-sweep" in cli and "--require-same-queries" in cli


@contextlib.contextmanager
def _serving(folder: Path):
    """``folder`` served over HTTP on 127.0.0.1 (a free port) while the block runs."""
    import functools
    import http.server
    import threading

    handler = functools.partial(_QuietHandler, directory=str(folder))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(__import__("http.server").server.SimpleHTTPRequestHandler):
    requests: list = []

    def log_message(self, *args):  # no request log on the test's stderr
        pass

    def do_GET(self):
        _QuietHandler.requests.append(self.path)
        super().do_GET()


_MATH_CHECK = """
<script>
window.addEventListener('load', () => setTimeout(() => {
  const raw = [...document.querySelectorAll('.arithmatex')]
    .filter(e => !e.querySelector('mjx-container')).map(e => e.textContent.slice(0, 40));
  const pre = document.createElement('pre'); pre.id = 'math-check';
  pre.textContent = JSON.stringify({
    rendered: document.querySelectorAll('mjx-container').length,
    arithmatex: document.querySelectorAll('.arithmatex').length, raw: raw.slice(0, 5),
    scripts: [...document.scripts].map(s => s.src).filter(Boolean)});
  document.body.appendChild(pre);
}, 3000));
</script>"""


@pytest.mark.slow
def test_formulas_render_offline_from_the_site_itself(site, tmp_path):
    """#43: MathJax came only from a CDN, so offline every formula was raw LaTeX.  The Ties
    page, served from localhost with no other network, is rendered in headless Chromium:
    every formula becomes a MathJax container, every script comes from the site, and a
    screenshot of the rendered formulas is taken (docs/img/ties-formulas.png is one)."""
    import html as html_lib
    import json

    sys.path.insert(0, str(REPO / "tests" / "report"))
    from _browser import chromium, chromium_flags

    page = site / "concepts" / "ties" / "index.html"
    text = page.read_text(encoding="utf-8")
    assert "cdn.jsdelivr" not in text and "js/mathjax/tex-mml-chtml.js" in text
    probe = page.parent / "probe.html"
    probe.write_text(text.replace("</body>", _MATH_CHECK + "</body>"), encoding="utf-8")
    with _serving(site) as base:
        url = f"{base}/concepts/ties/probe.html"
        dom = subprocess.run(chromium_flags(chromium(), tmp_path)
                             + ["--virtual-time-budget=15000", "--dump-dom", url],
                             capture_output=True, text=True, timeout=180)
        assert dom.returncode == 0, dom.stderr[-2000:]
        m = re.search(r'<pre id="math-check">(.*?)</pre>', dom.stdout, re.S)
        assert m, dom.stdout[-3000:]
        found = json.loads(html_lib.unescape(m.group(1)))
        assert found["arithmatex"] >= 10 and found["raw"] == [], found
        assert found["rendered"] >= found["arithmatex"], found
        assert all(s.startswith(base) for s in found["scripts"]), found["scripts"]
        assert "/js/mathjax/tex-mml-chtml.js" in _QuietHandler.requests
        shot = tmp_path / "ties.png"
        res = subprocess.run(chromium_flags(chromium(), tmp_path, 1200, 1400)
                             + ["--virtual-time-budget=15000", f"--screenshot={shot}",
                                f"{base}/concepts/ties/"],
                             capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert res.returncode == 0 and shot.stat().st_size > 20_000, res.stderr[-2000:]
    print(f"screenshot: {shot}")


_FENCE = re.compile(r"^( {0,3}|\s*)(`{3,}|~{3,})(.*)$")


def fence_problems(text: str) -> list[str]:
    """Where a page's code fences do not pair up: a fence with an info string (```bash) met
    inside an open block (a closing fence has none, so the block before it never closed:
    a stray fence above turned the rest of the page into code), or a block still open at the
    end of the page."""
    problems, open_at = [], None
    for n, line in enumerate(text.splitlines(), 1):
        m = _FENCE.match(line)
        if not m:
            continue
        marks, info = m.group(2), m.group(3).strip()
        if open_at is None:
            open_at = (n, marks)
        elif info:
            problems.append(f"line {n}: a fence with {info!r} inside the block opened on line "
                            f"{open_at[0]} (a stray or missing fence above it)")
        elif marks[0] == open_at[1][0] and len(marks) >= len(open_at[1]):
            open_at = None
    if open_at is not None:
        problems.append(f"line {open_at[0]}: a code block that never closes")
    return problems


def test_the_fence_checker_sees_a_stray_fence():
    ok = "text\n```bash\nls\n```\n\n~~~\n```\n~~~\n"
    assert fence_problems(ok) == []
    stray = "# demo\n\n```bash\nx\n```\n\n```\n\nprose\n\n```text\n$ y\n```\n"
    assert fence_problems(stray) == [
        "line 11: a fence with 'text' inside the block opened on line 7 (a stray or missing "
        "fence above it)"]
    assert fence_problems("```bash\nls\n") == ["line 1: a code block that never closes"]


def test_every_page_has_balanced_code_fences():
    """docs/guides/demo.md had a stray fence on line 7: the rest of the page rendered as one
    code block, and `mkdocs build --strict` does not see it."""
    problems = [f"{f.relative_to(REPO)}: {p}" for f in _markdown_files()
                for p in fence_problems(f.read_text(encoding="utf-8"))]
    assert not problems, "\n".join(problems)


def test_docs_name_only_paths_inside_the_repository():
    """A reader's clone has no ../shared: every path a page tells them to use is in the
    repository (the bundled NFCorpus is mteb_stratified/data/nfcorpus)."""
    found = [f"{f.relative_to(REPO)}:{n}" for f in _markdown_files()
             for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
             if "../shared" in line]
    assert not found, found


def test_docs_read_results_with_result_cache_not_the_deprecated_load_results():
    """mteb 2.26 deprecates ``mteb.load_results`` (it reads nothing from a local folder here);
    ``mteb.ResultCache(folder).load_results(include_remote=False)`` is what works."""
    found = [f"{f.relative_to(REPO)}:{n}" for f in _markdown_files()
             for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
             if re.search(r"\bmteb\.load_results\b", line)]
    assert not found, found


def _griffe_docstrings():
    spec = importlib.util.spec_from_file_location(
        "griffe_docstrings", REPO / "docs" / "hooks" / "griffe_docstrings.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_docstring_rewrites():
    """Sphinx roles, reST simple tables and ``name : what`` items, as mkdocstrings reads them."""
    g = _griffe_docstrings()
    assert g.sphinx_roles("see :func:`~a.b.evaluate` and :class:`a.B`, :mod:`x`") == \
        "see `evaluate` and `a.B`, `x`"
    table = ("Intro.\n\n====  =====  ====\nA     B      C\n====  =====  ====\n"
             "x     y y    z\n      more\nu     v      w w\n====  =====  ====\n\nAfter.")
    assert g.simple_tables(table) == (
        "Intro.\n\n| A | B | C |\n|---|---|---|\n| x | y y more | z |\n| u | v | w w |\n\n"
        "After.")
    doc = ("Do it.\n\nParameters\n----------\nqrels : the judgments.\nrun, depth : the run\n"
           "    and its depth.\n\nExamples\n--------\n>>> f(a : b)\n")
    assert g.section_items(doc) == (
        "Do it.\n\nParameters\n----------\nqrels\n    the judgments.\nrun, depth\n"
        "    the run\n    and its depth.\n\nExamples\n--------\n>>> f(a : b)\n")


@pytest.mark.slow
def test_the_api_reference_renders_its_docstrings(site):
    """#43: the API page showed 175 raw Sphinx roles, a reST table as lines of ``====`` and
    Parameters sections run together.  Now: no role, no rule, parameter tables."""
    page = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    roles = re.findall(r":(?:func|class|meth|mod|data|attr|exc):`?", page)
    assert roles == [], roles[:5]
    assert "=====" not in page
    assert page.count("doc-section-title") >= 8  # Parameters / Returns / Attributes tables
    table = page.split('<span class="doc-section-title">Parameters:</span>', 1)[1]
    table = table.split("</table>", 1)[0]
    assert re.search(r"<td>\s*<code>qrels</code>", table)  # evaluate's first parameter
