"""The structure artifact's schema: each field that loading or using an artifact reads, and
what it must hold.

An artifact may come from someone else, so every value that is used is checked when the folder
is loaded (:meth:`~.artifact.StructureArtifact.load`), before anything reads it.  A value out
of its range is an :class:`~mteb_stratified.core.errors.InputError` naming the file (and the
line of a table row) and the field, e.g.
``metadata.json: corpus.n_docs is 1e+308: expected an integer 1..10^9``.

The schema is a table, not code: :data:`METADATA` maps each dotted field of ``metadata.json`` to
``(required, check)``; :data:`INIT_PARAMS` the constructor parameters each built-in extractor
kind may record; :data:`ROWS` the fields of each table's rows.  A :class:`Check` names the JSON
types it takes (a bool is never a number) and tests the value: integers are bounded, numbers
finite (NaN, infinity and integers beyond the float range are refused), cut-points ascending,
strings bounded, and a spaCy model is a package name, never a path (a sentence-transformers
model may be a folder: it is opened only when the user gives the same folder).  Fields the
table does not name are provenance: kept, shown, never used.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Callable

__all__ = ["Check", "METADATA", "INIT_PARAMS", "OPEN_INIT_PARAMS", "ROWS", "MAX_COUNT", "MAX_ID",
           "REQUEST_BOUNDS", "REBUILD_FIX", "metadata_problem", "row_problem",
           "model_name_problem", "shown"]

#: The largest count (documents, entities, queries) and id an artifact may record.
MAX_COUNT = MAX_ID = 10**9
#: The longest name (model, extractor, fingerprint) and text (labels, descriptions) accepted.
MAX_NAME, MAX_TEXT = 200, 100_000
#: The most cut-points a bins list may hold (k cut-points: k + 1 bins).
MAX_CUTS = 99
#: Upper bounds of the request sizes an LLM-built artifact records (completion tokens and
#: characters of the text sent per query): the recorded sizes are taken up to these, so a shared
#: file cannot make the user's paid endpoint answer longer requests.
REQUEST_BOUNDS = {"max_tokens": 4096, "max_chars": 20000}
#: What to do about an artifact that breaks the schema.
REBUILD_FIX = ("rebuild the artifact with `mteb-stratified structure --corpus ... --out DIR` "
               "(delete the damaged folder first), or copy it again from its source")

_KIND = {type(None): "null", bool: "boolean", int: "number", float: "number", str: "string",
         list: "array", dict: "object"}


def _always(_value) -> bool:
    return True


@dataclass(frozen=True)
class Check:
    """What a field must hold: one of the JSON ``kinds`` (``number``, ``string``, ``boolean``,
    ``array``, ``object``, ``null``), and a value ``test`` passes; ``expected`` says so in words
    ("an integer 1..10^9")."""

    expected: str
    kinds: frozenset
    test: Callable[[object], bool] = _always

    def problem(self, value) -> str | None:
        """What is wrong with ``value`` ("of the wrong type (string)", "1e+308"), or None."""
        kind = _KIND.get(type(value), type(value).__name__)
        if kind not in self.kinds:
            return f"of the wrong type ({kind})"
        return None if self.test(value) else shown(value)


def shown(value) -> str:
    """``value`` as a message shows it: JSON, cut short; a long integer by its head and
    length."""
    if type(value) is int and not -10**15 < value < 10**15:
        digits = len(str(abs(value)))
        return f"{str(value)[:8]}... (an integer of {digits} digits)"
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."


def _bound(n) -> str:
    if isinstance(n, int) and n >= 10**6 and str(n).rstrip("0") == "1":
        return f"10^{len(str(n)) - 1}"
    return str(n)


def _finite(value) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond the float range
        return False


def integer(lo: int, hi: int) -> Check:
    """An integer in ``lo..hi`` (``2.0`` is a number, not an integer)."""
    return Check(f"an integer {_bound(lo)}..{_bound(hi)}", frozenset({"number"}),
                 lambda v: type(v) is int and lo <= v <= hi)


def number(lo: float | None = None, hi: float | None = None) -> Check:
    """A finite number in ``[lo, hi]`` (an open side when None)."""
    where = ("" if lo is None and hi is None else f" >= {lo}" if hi is None
             else f" <= {hi}" if lo is None else f" in [{lo}, {hi}]")
    return Check(f"a finite number{where}", frozenset({"number"}),
                 lambda v: _finite(v) and (lo is None or v >= lo) and (hi is None or v <= hi))


def text(max_chars: int = MAX_TEXT, pattern: str | None = None, what: str = "a string") -> Check:
    """A string of at most ``max_chars`` characters (matching ``pattern`` in full)."""
    rx = re.compile(pattern) if pattern else None
    return Check(f"{what} of at most {max_chars} characters", frozenset({"string"}),
                 lambda v: len(v) <= max_chars and (rx is None or rx.fullmatch(v) is not None))


def one_of(*values: str) -> Check:
    return Check("one of " + ", ".join(repr(v) for v in values), frozenset({"string"}),
                 lambda v: v in values)


def list_of(item: Check, what: str, *, lo: int = 0, hi: int = MAX_COUNT,
            ascending: bool = False) -> Check:
    """A list of ``lo..hi`` values each passing ``item`` (``ascending``: in order)."""
    if item.test is _always and item.kinds == {"string"}:
        def each(v):  # the common case (names), without a call per value
            return all(type(x) is str for x in v)
    else:
        def each(v):
            return all(item.problem(x) is None for x in v)

    def test(v):
        return (lo <= len(v) <= hi and each(v)
                and (not ascending or all(a <= b for a, b in zip(v, v[1:]))))
    return Check(what, frozenset({"array"}), test)


def map_of(key: Check, value: Check, what: str) -> Check:
    """An object whose keys pass ``key`` and whose values pass ``value``."""
    return Check(what, frozenset({"object"}),
                 lambda v: all(key.problem(k) is None and value.problem(x) is None
                               for k, x in v.items()))


def optional(check: Check) -> Check:
    """``check``, or null."""
    return Check(f"{check.expected}, or null", check.kinds | {"null"},
                 lambda v: v is None or check.test(v))


# -- model names --------------------------------------------------------------------------------
#: A model hub name, ``NAME`` or ``ORG/NAME`` (anything else is taken as a path).
_HUB_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)?")


def model_name_problem(name) -> str | None:
    """Why ``name`` is not a model hub name (a path, ``..``, a character of a path), or None."""
    if not isinstance(name, str):
        return f"not a name ({_KIND.get(type(name), type(name).__name__)})"
    if len(name) > MAX_NAME or _HUB_NAME.fullmatch(name) is None or ".." in name:
        return "a path, not a model hub name"
    return None


#: A sentence-transformers model an artifact records: a hub name, or the folder it was built
#: with; either is loaded only when it is the packaged one or the user gives the same
#: (:func:`~.query_entities.embedding_model_of`), so a path here is not refused.
MODEL = text(MAX_NAME * 5, what="a model hub name or a model folder (loaded only when it is the "
                                "packaged model or you give the same with --embedding-model)")
#: A spaCy model recorded by an artifact: an installed package's name (a Python module name),
#: never a path (:func:`~.extractors.spacy_model_dir` checks it is installed when it is used).
SPACY_PACKAGE = text(MAX_NAME, r"[A-Za-z_][A-Za-z0-9_]*",
                     "a spaCy model package name (a Python module name, never a path)")

# -- the tables -------------------------------------------------------------------------------
REQUIRED, OPTIONAL = True, False
OBJECT = Check("a JSON object", frozenset({"object"}))
STRING = Check("a string", frozenset({"string"}))
NAME = text(MAX_NAME)
NAMES = list_of(STRING, "a list of strings")
COUNT = integer(0, MAX_COUNT)
#: Δ and J cut-points: ascending, in [0, 1].
CUTS = list_of(number(0, 1), f"a list of 1..{MAX_CUTS} ascending finite cut-points in [0, 1]",
               lo=1, hi=MAX_CUTS, ascending=True)

#: ``metadata.json``: dotted field -> (required, check): ``required``, the field must be there;
#: else it may be absent, and is null only where its check says so (a value that is used is
#: never null).  A parent comes before its fields; the fields of an absent object are not
#: looked for.
METADATA: dict = {
    "name": (OPTIONAL, optional(text(MAX_NAME * 5))),
    "settings_key": (OPTIONAL, optional(NAME)),
    "normaliser_version": (OPTIONAL, optional(NAME)),
    "clusters": (OPTIONAL, one_of("documents", "entities")),
    "embedding_model": (OPTIONAL, optional(MODEL)),  # provenance
    "static_embedding": (OPTIONAL, OBJECT),  # provenance (describe.static_embedding_record)
    "int8_embedding": (OPTIONAL, OBJECT),  # provenance (describe.int8_embedding_record)
    "bf16_embedding": (OPTIONAL, OBJECT),  # provenance (describe.bf16_embedding_record)
    "document_embedding_choice": (OPTIONAL, OBJECT),  # --document-embedding auto's pick
    "corpus": (REQUIRED, OBJECT),
    "corpus.fingerprint": (REQUIRED, NAME),
    "corpus.n_docs": (REQUIRED, integer(1, MAX_COUNT)),
    "extractor": (REQUIRED, OBJECT),
    "extractor.kind": (REQUIRED, text(MAX_NAME, r"[A-Za-z0-9_][A-Za-z0-9_.-]*",
                                      "an extractor name")),
    "extractor.name": (OPTIONAL, optional(NAME)),
    "extractor.version": (OPTIONAL, optional(NAME)),
    "extractor.prompt_version": (OPTIONAL, optional(NAME)),
    "extractor.init_params": (OPTIONAL, optional(OBJECT)),
    "extractor.params": (OPTIONAL, optional(OBJECT)),
    "extractor.params.model": (OPTIONAL, optional(text(MAX_NAME * 5))),
    # extractor.params.max_tokens / max_chars: any recorded size is taken up to
    # REQUEST_BOUNDS (a number that is not a positive integer: the user's default)
    "parameters": (REQUIRED, OBJECT),
    "parameters.embedding_model": (OPTIONAL, optional(MODEL)),
    "parameters.entity_embedding": (OPTIONAL, one_of("static", "model")),
    "parameters.document_embedding": (OPTIONAL, one_of("static", "model", "bf16", "int8")),
    "parameters.min_chars": (OPTIONAL, integer(0, 1000)),
    "parameters.max_words": (OPTIONAL, integer(1, 1000)),
    "parameters.threshold": (OPTIONAL, number(-1, 1)),
    "parameters.idf_weights": (OPTIONAL, Check("true or false", frozenset({"boolean"}))),
    "abbreviations": (OPTIONAL, map_of(text(MAX_NAME * 5), text(MAX_NAME * 5),
                                       "an object of abbreviation -> expansion strings")),
    "stop_entities": (OPTIONAL, NAMES),
    "bins": (OPTIONAL, OBJECT),
    "bins.dispersion": (OPTIONAL, CUTS),
    "bins.alignment": (OPTIONAL, CUTS),
    "bins.alignment_soft": (OPTIONAL, CUTS),
    "bins.tau": (OPTIONAL, number(-1, 1)),
    "bins.source": (OPTIONAL, STRING),
    "bins.reference": (OPTIONAL, OBJECT),
    "bins.reference.quantiles": (OPTIONAL, list_of(number(0, 1), "a list of ascending "
                                                   "quantiles in [0, 1]", ascending=True)),
    "bins.reference.n_queries": (OPTIONAL, COUNT),
    "bins.reference.excluded": (OPTIONAL, COUNT),
    "bins.reference.level": (OPTIONAL, number(0, 1000)),
    "docs_without_clusters": (OPTIONAL, OBJECT),
    "docs_without_clusters.count": (OPTIONAL, COUNT),
    "docs_without_clusters.ids": (OPTIONAL, NAMES),
    "extraction_failures": (OPTIONAL, OBJECT),
    "extraction_failures.count": (OPTIONAL, COUNT),
    "stats": (OPTIONAL, OBJECT),
    "quality": (OPTIONAL, OBJECT),
}

_SPACY_INIT = {"model": SPACY_PACKAGE, "max_words": integer(1, 1000),
               "batch_size": integer(1, 100_000), "n_process": optional(integer(1, 4096))}
#: The constructor parameters (``extractor.init_params``) each built-in extractor kind may
#: record; any other is refused (except for :data:`OPEN_INIT_PARAMS`).  A registered
#: extractor's parameters must fit its constructor (checked when it is built).
INIT_PARAMS: dict = {
    "offline": _SPACY_INIT,
    "spacy": _SPACY_INIT,
    "keybert": {"model": optional(MODEL), "top_n": integer(1, 1000),
                "ngram_range": list_of(integer(1, 10), "two ascending integers 1..10", lo=2,
                                       hi=2, ascending=True)},
    "llm": {"model": optional(text(MAX_NAME * 5)), "base_url": optional(text(MAX_NAME * 10))},
}
#: The kinds whose other recorded parameters are provenance (the LLM extractor is built from
#: the user's own settings: :func:`~.query_entities.query_extractor`).
OPEN_INIT_PARAMS = frozenset({"llm"})

#: A cluster id as a key of ``doc_clusters`` weights: a decimal 0..10^9, without leading zeros.
CLUSTER_KEY = text(10, r"0|[1-9][0-9]{0,9}", "a cluster id 0..10^9 in decimal")
_WEIGHTS = map_of(CLUSTER_KEY, number(0), "an object of cluster ids (0..10^9) -> finite "
                                          "numbers >= 0")
_IDS = list_of(integer(0, MAX_ID), "a list of cluster ids 0..10^9")
#: Each table's row fields: name -> (required, check).
ROWS: dict = {
    "entities": {"name": (REQUIRED, STRING), "cluster": (REQUIRED, integer(-1, MAX_ID)),
                 "id": (OPTIONAL, integer(0, MAX_ID)), "doc_freq": (OPTIONAL, COUNT),
                 "centrality": (OPTIONAL, number()), "aliases": (OPTIONAL, NAMES),
                 "description": (OPTIONAL, STRING)},
    "doc_entities": {"doc_id": (REQUIRED, STRING), "entities": (REQUIRED, NAMES)},
    "clusters": {"id": (REQUIRED, integer(0, MAX_ID)), "label": (REQUIRED, STRING),
                 "mass": (REQUIRED, number(0)), "membership_mass": (OPTIONAL, number(0)),
                 "size": (OPTIONAL, COUNT), "n_docs": (OPTIONAL, COUNT),
                 "terms": (REQUIRED, NAMES), "titles": (OPTIONAL, NAMES),
                 "central_docs": (OPTIONAL, NAMES), "top_entities": (OPTIONAL, NAMES)},
    "doc_clusters": {"doc_id": (REQUIRED, STRING), "weights": (REQUIRED, _WEIGHTS)},
    "cluster_levels": {"level": (REQUIRED, integer(1, 64)), "id": (REQUIRED, integer(0, MAX_ID)),
                       "children": (REQUIRED, _IDS), "clusters": (REQUIRED, _IDS),
                       "label": (REQUIRED, STRING), "mass": (REQUIRED, number(0)),
                       "terms": (REQUIRED, NAMES), "titles": (OPTIONAL, NAMES),
                       "central_docs": (OPTIONAL, NAMES), "top_entities": (OPTIONAL, NAMES)},
}


def _field_problem(where: str, found: bool, value, required: bool, check: Check) -> str | None:
    if not found:
        return f"{where} is missing: expected {check.expected}" if required else None
    problem = check.problem(value)
    return f"{where} is {problem}: expected {check.expected}" if problem else None


def metadata_problem(metadata: dict) -> str | None:
    """The first field of ``metadata`` that breaks :data:`METADATA` or :data:`INIT_PARAMS`,
    in words ("corpus.n_docs is ...: expected ..."), or None."""
    for field, (required, check) in METADATA.items():
        *parents, key = field.split(".")
        holder = metadata
        for p in parents:
            holder = holder.get(p) if isinstance(holder, dict) else None
        if not isinstance(holder, dict):
            continue  # an optional object that is absent: its fields neither
        problem = _field_problem(field, key in holder, holder.get(key), required, check)
        if problem:
            return problem
    extractor = metadata["extractor"]
    allowed = INIT_PARAMS.get(extractor["kind"])
    params = extractor.get("init_params") or {}
    if allowed is None:
        return None
    for key, value in sorted(params.items()):
        where = f"extractor.init_params.{key}"
        if key not in allowed:
            if extractor["kind"] in OPEN_INIT_PARAMS:
                continue
            return (f"{where} is not a parameter of the {extractor['kind']!r} extractor: "
                    f"expected only {', '.join(allowed)}")
        problem = _field_problem(where, True, value, True, allowed[key])
        if problem:
            return problem
    return None


def row_problem(row, table: str) -> str | None:
    """What is wrong with one row of ``table`` (:data:`ROWS`), or None."""
    if type(row) is not dict:
        return f"a {table} row must be a JSON object, got {_KIND.get(type(row), 'a value')}"
    for name, (required, check) in ROWS[table].items():
        if name not in row:
            if required:
                return f"a {table} row has no {name!r} field: expected {check.expected}"
            continue
        problem = check.problem(row[name])
        if problem:
            return f"{table} field {name!r} is {problem}: expected {check.expected}"
    return None
