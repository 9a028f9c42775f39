"""mkdocs hook: MathJax served from the site itself, so formulas render offline.

The site's pages load ``js/mathjax/tex-mml-chtml.js`` (``extra_javascript`` in mkdocs.yml), not a
CDN.  This hook adds MathJax 3's browser build to the site from the ``django-static-mathjax``
package (the official MathJax 3.2.2 ``es5`` files; no Django needed, it is only the files),
which the ``[docs]`` extra installs: the combined TeX + MathML component, its CHTML fonts and
the components it may load on demand (TeX extensions, the menu, assistive MathML, the speech
rule engine of the explorer): 9.5 MB in all.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Where the files go in the site (MathJax finds its fonts and components next to its script).
TARGET = "js/mathjax"
#: What the site needs of MathJax's es5 folder.
PARTS = ("tex-mml-chtml.js", "output", "input", "ui", "a11y", "adaptors", "sre")


def mathjax_es5() -> Path:
    """The installed MathJax 3 ``es5`` folder, or a clear error naming the install command."""
    try:
        import mathjax
    except ImportError:
        raise SystemExit('MathJax is served from the site: python -m pip install ".[docs]" '
                         "(it installs django-static-mathjax, MathJax 3's files)") from None
    return Path(mathjax.__file__).resolve().parent / "static" / "mathjax" / "es5"


def on_files(files, config):  # mkdocs hook
    from mkdocs.structure.files import File

    root = mathjax_es5()
    for part in PARTS:
        base = root / part
        paths = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        for path in paths:
            uri = f"{TARGET}/{path.relative_to(root).as_posix()}"
            files.append(File.generated(config, uri, abs_src_path=os.fspath(path)))
    return files
