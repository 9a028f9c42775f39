"""Screenshot of the docs' home page, rendered in headless Chromium.

Run from the repository root (needs the ``[docs]`` extra and ``chromium`` on PATH):

    python benchmarks/docs_screenshot.py [--out docs/img/docs-home.png] [--size 1400,1000]

It builds the site with ``mkdocs build`` into a temporary folder (``--no-strict`` when the
screenshot does not exist yet, since the docs link to it; ``--strict`` otherwise), opens its
``index.html`` in headless Chromium at the given window size and writes the PNG. The site
itself is thrown away.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _harness import ROOT as REPO_ROOT

ROOT = Path(REPO_ROOT)


def build_site(dest: Path, strict: bool) -> None:
    cmd = [sys.executable, "-m", "mkdocs", "build", "--strict" if strict else "--no-strict",
           "-q", "-f", str(ROOT / "mkdocs.yml"), "-d", str(dest)]
    subprocess.run(cmd, cwd=ROOT, check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def screenshot(page: Path, out: Path, size: str) -> None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which(
        "google-chrome")
    if browser is None:
        sys.exit("docs_screenshot: no chromium on PATH (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([browser, "--headless", "--disable-gpu", "--no-sandbox",
                        "--hide-scrollbars", f"--user-data-dir={profile}",
                        f"--screenshot={out}", f"--window-size={size}",
                        page.as_uri()], check=True, capture_output=True, timeout=120)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "docs" / "img" / "docs-home.png"))
    ap.add_argument("--size", default="1400,1000", help="window width,height (default 1400,1000)")
    args = ap.parse_args(argv)
    out = Path(args.out).resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        build_site(site, strict=out.exists())
        screenshot(site / "index.html", out, args.size)
    print(f"wrote {out} ({out.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
