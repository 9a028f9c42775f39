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


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path):
    """The site builds with no warning. Without mkdocs this fails: pip install '.[docs]'."""
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
         "-f", str(REPO / "mkdocs.yml"), "-d", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, timeout=600,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, (
        f"mkdocs build --strict failed (exit {proc.returncode}; install the docs extra with "
        f"pip install '.[docs]' if mkdocs is missing):\n"
        f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    assert (tmp_path / "site" / "index.html").is_file()
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").is_file()
    cli = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "precision-sweep" in cli and "--require-same-queries" in cli


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
