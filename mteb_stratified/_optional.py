"""Optional dependencies: the one place that says how to install an extra.

``require(module, extra)`` imports ``module`` or raises an ImportError whose text names the
exact install command; the CLI prints it and exits with status 2.
"""

from __future__ import annotations

import importlib

__all__ = ["require", "install_hint"]


def install_hint(extra: str) -> str:
    """The command that installs ``extra``, from a clone and from a package index."""
    return (f'pip install ".[{extra}]" in a clone of mteb-stratified '
            f'(or pip install "mteb-stratified[{extra}]" from a package index)')


def require(module: str, extra: str):
    """Import ``module`` or raise an ImportError naming the extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"{module} is needed here (it is missing: {exc}); install it with "
                          f"{install_hint(extra)}") from exc
