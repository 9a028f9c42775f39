"""Lazy package attributes (PEP 562), shared by the package facades that load a public name's
module on first use: ``mteb_stratified``, ``mteb_stratified.core`` and ``mteb_stratified.io``."""

from __future__ import annotations

import importlib
import importlib.util

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, namespace: dict, lazy: dict):
    """``(__getattr__, __dir__)`` for ``package``: a public name in ``lazy`` (name -> module,
    relative to the package) imports its module on first access and is cached in
    ``namespace`` (the package's globals); a submodule's name imports it (``package.submodule``
    works without its own import, as when the ``__init__`` imported it eagerly)."""

    def __getattr__(name: str):
        if name in lazy:
            value = getattr(importlib.import_module(f"{package}.{lazy[name]}"), name)
        elif not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}"):
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__():
        """The module's names, the lazy ones included (for completion and ``help``)."""
        return sorted(set(namespace) | set(lazy))

    return __getattr__, __dir__
