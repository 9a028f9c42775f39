"""The query side of a structure artifact: the extractor that reads queries, built from the
artifact and the user's own inputs, never from the artifact alone.

An artifact (:mod:`.artifact`) is data, and it may come from someone else: what its
``metadata.json`` records about its extractor and models is provenance.  So the code that needs
the entities of queries builds their extractor here, from the artifact and what the user gave:

* :func:`query_extractor` — the recorded extractor kind with its recorded parameters (refused
  when one could name a file or a server, or names a model the user does not have or did not
  name), or, for an LLM-built artifact, the LLM extractor of the user's own ``endpoint``
  (settings resolved by :func:`mteb_stratified.llm.endpoint.resolve_settings`; the recorded
  endpoint is never contacted);
* :func:`embedding_model_of` — the recorded embedding model, when it is the packaged one or
  the one the user named (``--embedding-model``): the same consent rule;
* :func:`recorded_extractor` — :func:`query_extractor` without user input, built once per
  artifact: what :meth:`~.artifact.StructureArtifact.extract_entities` uses when given no
  extractor;
* :class:`QueryReader` — an artifact read with a given query extractor, for code that takes an
  artifact and asks it for query entities (the generation loop).
"""

from __future__ import annotations

import inspect
import os
import threading
import weakref
from typing import Callable

from ..core.errors import InputError
from .schema import REBUILD_FIX, REQUEST_BOUNDS, model_name_problem

__all__ = ["query_extractor", "embedding_model_of", "recorded_extractor", "QueryReader"]

_NO_ENDPOINT_FIX = ("pass --base-url URL --model NAME --api-key KEY (or set OPENAI_BASE_URL, "
                    "OPENAI_MODEL and OPENAI_API_KEY)")


def _bad_type(value, kind) -> bool:
    return isinstance(value, bool) or not isinstance(value, kind)


def _plain_setting(value) -> bool:
    """A number, flag or short name that cannot point at a file or a server."""
    if value is None or isinstance(value, (bool, int, float)):
        return True
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, (bool, int, float)) for v in value)
    if not isinstance(value, str):
        return False
    return not (any(c in value for c in "/\\:~") or value.startswith("."))


def _url(value) -> str | None:
    return value.rstrip("/") if isinstance(value, str) and value else None


def embedding_model_of(artifact, allowed: str | None = None) -> str | None:
    """The embedding model ``artifact`` records: None (the packaged one), the packaged one by
    name, or the model hub name or model folder the user named themselves (``allowed``, e.g.
    ``--embedding-model NAME``).  Any other is refused: loading it would download weights
    (pickles can run code) or open a folder chosen by a shared file; a name is never taken as a
    folder of the current folder."""
    return _consented_model(artifact, artifact.metadata["parameters"].get("embedding_model"),
                            allowed, "the embedding model", "--embedding-model")


def _consented_model(artifact, name, allowed, what: str, option: str) -> str | None:
    """``name``, a sentence-transformers model the artifact records, when it is the packaged
    one or exactly the one the user gave (``allowed``, by ``option``): a hub name, or a model
    folder (a path the artifact records is opened only when the user gives that path
    themselves).  A name that is also a folder of the current folder is refused (the loader
    would open it)."""
    from .embed import DEFAULT_MODEL
    if name is None or name == DEFAULT_MODEL:
        return name
    is_path = model_name_problem(name) is not None
    if name == allowed and (is_path or not os.path.exists(name)):
        return name  # the user named this model, or this folder, themselves
    if is_path or os.path.exists(name):
        raise InputError(f"metadata.json records {what} {name!r}, a path: a "
                         "structure artifact never chooses a file to open",
                         source=artifact.source,
                         fix=f"if it is your own model folder, give it yourself: {option} "
                             f"{name}; else rebuild the artifact with `mteb-stratified "
                             f"structure {option} NAME` (a model hub name), or use an "
                             "artifact from a source you trust")
    if name != allowed:
        given = "" if allowed is None else f" ({option} {allowed!r} was given)"
        raise InputError(f"metadata.json records {what} {name!r}, not the "
                         f"packaged {DEFAULT_MODEL}{given}: a structure artifact never "
                         "chooses a model to download and load", source=artifact.source,
                         fix=f"if you trust that model, allow it with {option} "
                             f"{name}; else use an artifact built with the packaged model")
    return name


def query_extractor(artifact, endpoint: dict | None = None, *,
                    embedding_model: str | None = None,
                    notify: Callable[[str], None] | None = None):
    """The extractor for the queries of ``artifact``, built from it and the user's inputs.

    The recorded extractor kind with its recorded parameters, checked (:func:`_recorded_params`);
    ``embedding_model``: the model the user names (``--embedding-model``), which a recorded
    KeyBERT model other than the packaged one must be.  For an LLM-built artifact, the LLM
    extractor of the user's ``endpoint``: :class:`~.llm.LLMExtractor` arguments (``base_url``,
    ``model``, ``api_key``, ``cache_path``, ``timeout``, ``provider``, ...; unset ones fall back
    to the user's environment), with the recorded request sizes kept up to
    :data:`~.schema.REQUEST_BOUNDS` unless the settings give their own; ``notify(line)`` is
    told when that endpoint or model differs from the one the artifact records.  No
    ``endpoint`` for an LLM-built artifact is an :class:`InputError`.
    """
    info = artifact.metadata["extractor"]
    if info["kind"] == "llm":
        return _llm_extractor(artifact, info, endpoint, notify)
    from .registry import extractor_class
    try:
        cls = extractor_class(info["kind"])
    except InputError as exc:  # not installed here: say which file names it
        raise InputError(f"extractor.kind is {info['kind']!r}: {exc.message}",
                         source=artifact.source, fix=exc.fix) from None
    return cls(**_recorded_params(artifact, info, cls, embedding_model))


def _recorded_params(artifact, info: dict, cls, allowed: str | None) -> dict:
    """The recorded constructor parameters of ``cls``, refused when one could name a path
    or server, when a recorded model is not one the user has (an installed spaCy package;
    a sentence-transformers model as for :func:`embedding_model_of`), or when they do not fit
    the constructor."""
    from .extractors import KeyBERTExtractor, SpacyNounChunkExtractor
    params = info.get("init_params") or {}
    if not isinstance(params, dict):
        params = {"init_params": params}
    for key, value in params.items():
        if not _plain_setting(value):
            raise InputError(
                f"metadata.json records the extractor parameter {key}={value!r}, which "
                "could name a file or a server; a structure artifact never chooses where "
                "we read or connect", source=artifact.source,
                fix="rebuild the artifact with your own settings (`mteb-stratified "
                    "structure`), or use an artifact from a source you trust")
    if issubclass(cls, SpacyNounChunkExtractor) and "model" in params:
        _check_spacy_model(artifact, params["model"])
    if issubclass(cls, KeyBERTExtractor):
        _consented_model(artifact, params.get("model"), allowed,
                         "the KeyBERT model (extractor.init_params.model)", "--embedding-model")
    try:
        inspect.signature(cls).bind(**params)
    except TypeError as exc:
        raise InputError(f"extractor.init_params do not fit the {info['kind']!r} extractor "
                         f"({cls.__module__}.{cls.__qualname__}): {exc}",
                         source=artifact.source, fix=REBUILD_FIX) from None
    return dict(params)


def _check_spacy_model(artifact, name: str) -> None:
    """A spaCy model the artifact records must be an installed model package: a name is
    never looked up as a folder (spaCy would load ``./name`` from the current folder)."""
    from .extractors import spacy_install_command, spacy_model_dir
    if spacy_model_dir(name) is None:
        raise InputError(
            f"extractor.init_params.model is {name!r}, a spaCy model that is not an "
            "installed package here (a model an artifact records is only ever loaded from "
            "an installed package, never from a folder)", source=artifact.source,
            fix=f"if you trust that model, install it ({spacy_install_command(name)}); else "
                "rebuild the artifact with the packaged spaCy model: `mteb-stratified "
                "structure --corpus BEIR_FOLDER --out DIR`")


def _llm_extractor(artifact, info: dict, endpoint: dict | None, notify):
    """The user's LLM extractor (:func:`query_extractor`)."""
    from ..llm.endpoint import resolve_settings
    from .llm import LLMExtractor
    ep = dict(endpoint or {})
    _, model, key = resolve_settings(model=ep.get("model"), api_key=ep.get("api_key"))
    if endpoint is None or not model or not (key or ep.get("provider") is not None):
        raise InputError(
            "this structure artifact was built with the LLM extractor, so the query "
            "entities need an LLM endpoint of your own (the one recorded in its "
            "metadata.json is never contacted)", source=artifact.source, fix=_NO_ENDPOINT_FIX)
    recorded = info.get("params") if isinstance(info.get("params"), dict) else {}
    sizes = {k: min(recorded[k], bound) for k, bound in REQUEST_BOUNDS.items()
             if not _bad_type(recorded.get(k), int) and recorded[k] >= 1}
    extractor = LLMExtractor(**{**sizes, **ep})
    init = info.get("init_params") if isinstance(info.get("init_params"), dict) else {}
    was = (_url(init.get("base_url")), recorded.get("model", init.get("model")))
    now = (_url(extractor.base_url), extractor.model)
    if was != now and notify is not None:
        notify(f"note: the artifact's entities were extracted by model {was[1]!r} at "
               f"{was[0] or 'the default endpoint'} (recorded, not contacted); the "
               f"query entities now come from a different extractor: model "
               f"{now[1]!r} at {now[0] or 'the default endpoint'}")
    return extractor


_RECORDED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_RECORDED_LOCK = threading.Lock()


def recorded_extractor(artifact):
    """:func:`query_extractor` of ``artifact`` with no user input (no endpoint, no model the
    user names), built once per artifact object: the extractor a query is read with when the
    caller gives none.  An LLM-built artifact, or one recording a model the user must name,
    is refused as :func:`query_extractor` refuses it."""
    with _RECORDED_LOCK:
        extractor = _RECORDED.get(artifact)
        if extractor is None:
            extractor = _RECORDED[artifact] = query_extractor(artifact)
        return extractor


class QueryReader:
    """An artifact read with a given query extractor: every attribute is the artifact's, but
    :meth:`extract_entities` and :meth:`extract_entities_batch` use ``extractor`` (e.g. from
    :func:`query_extractor` with the user's endpoint).  For code that takes an artifact and asks
    it for query entities, such as :func:`mteb_stratified.generation.generate_queries`."""

    __slots__ = ("artifact", "extractor")

    def __init__(self, artifact, extractor) -> None:
        object.__setattr__(self, "artifact", artifact)
        object.__setattr__(self, "extractor", extractor)

    def __getattr__(self, name: str):
        if name in QueryReader.__slots__:  # not set yet (a copy being made)
            raise AttributeError(name)
        return getattr(self.artifact, name)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"a {type(self).__name__} is read-only")

    def __reduce__(self):
        return type(self), (self.artifact, self.extractor)

    def extract_entities(self, text: str, extractor=None) -> set[str]:
        ex = self.extractor if extractor is None else extractor
        return self.artifact.extract_entities(text, ex)

    def extract_entities_batch(self, texts, extractor=None) -> list[set[str]]:
        ex = self.extractor if extractor is None else extractor
        return self.artifact.extract_entities_batch(texts, ex)

    def __repr__(self) -> str:
        return f"QueryReader({self.artifact!r}, {type(self.extractor).__name__})"
