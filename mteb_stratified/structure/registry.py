"""Entity extractors by name: the built-in ones, and any a package registers.

A third-party extractor is a class honouring :class:`~.extractors.EntityExtractor` (check it
with :class:`mteb_stratified.testing.ExtractorConformance`), registered under the entry-point
group ``mteb_stratified.extractors``::

    [project.entry-points."mteb_stratified.extractors"]
    my-extractor = "my_package.extract:MyExtractor"

It is then reachable as ``mteb-stratified structure --extractor my-extractor`` (the CLI offers
the built-in names; the Python API, :func:`make_extractor`, every registered one).  Targets are
``"module:Class"`` strings imported on first use, so naming an extractor imports nothing else.
"""

from __future__ import annotations

import importlib

from ..core.errors import InputError

__all__ = ["BUILTIN", "ENTRY_POINT_GROUP", "available", "extractor_class", "make_extractor"]

ENTRY_POINT_GROUP = "mteb_stratified.extractors"
#: name -> "module:Class" of the extractors that ship with the package.
BUILTIN = {
    "offline": "mteb_stratified.structure.extractors:SpacyNounChunkExtractor",
    "spacy": "mteb_stratified.structure.extractors:SpacyNounChunkExtractor",
    "keybert": "mteb_stratified.structure.extractors:KeyBERTExtractor",
    "llm": "mteb_stratified.structure.llm:LLMExtractor",
}


def available() -> dict:
    """Every extractor name -> ``"module:Class"``: the built-in ones, then the registered ones
    (a registered name never replaces a built-in one)."""
    from importlib.metadata import entry_points

    out = dict(BUILTIN)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        out.setdefault(ep.name, ep.value)
    return out


def extractor_class(name: str) -> type:
    """The class registered under ``name``."""
    names = available()
    if name not in names:
        raise InputError(f"unknown extractor {name!r}",
                         fix=f"choose one of: {', '.join(names)} (or register one under the "
                             f"entry-point group {ENTRY_POINT_GROUP})")
    module, _, attr = names[name].partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        if isinstance(exc, ImportError) and "pip install" in str(exc):
            raise
        raise InputError(f"extractor {name!r} points at {names[name]}, which cannot be "
                         f"loaded ({type(exc).__name__}: {exc})",
                         fix="reinstall the package that registers it") from None


def make_extractor(name: str, **params):
    """An extractor instance by name (``offline`` = ``spacy``, ``keybert``, ``llm``, or a
    registered one) with its constructor ``params``."""
    return extractor_class(name)(**params)
