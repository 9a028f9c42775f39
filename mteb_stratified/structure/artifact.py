"""The persisted structure artifact: a folder of gzip-compressed JSONL tables + metadata.json.

Files (all deterministic: sorted keys and rows, shortest exact float repr, gzip mtime 0, so the same
inputs and seed give byte-identical files):

* ``metadata.json``: every parameter, package versions, the corpus fingerprint, the extractor
  (name, version, params; for an LLM the prompt version), statistics, documents left without
  clustered entities (count + ids + reason), extraction failures, global abbreviations, bins;
* ``entities.jsonl.gz``: ``{id, name, cluster, doc_freq, centrality, aliases, description}``
  (``cluster`` = -1 for an entity in no retained cluster);
* ``doc_entities.jsonl.gz``: ``{doc_id, entities}``: all normalised entity names of a document
  (after near-duplicate merging), including rare ones that are in no cluster;
* ``clusters.jsonl.gz``: ``{id, label, size, n_docs, mass, top_entities}``;
* ``doc_clusters.jsonl.gz``: ``{doc_id, weights: {cluster: m_d(c)}}``;
* ``cluster_levels.jsonl.gz``: the cluster tree above the fine clusters
  (:mod:`mteb_stratified.core.hierarchy`), one row per unit of each level ℓ ≥ 1:
  ``{level, id, children, clusters, label, mass, top_entities}`` (``children``: the ids of the
  level below it holds; ``clusters``: its fine clusters).

The metadata records how the artifact was built, for provenance only: an artifact may come from
someone else, so reusing it never contacts an endpoint, uses a key or opens a path written in it
(:meth:`StructureArtifact.query_extractor`).  Every file is written through a temp file unique
to the process; a damaged file is an :class:`InputError` naming the file and line.  Loading
checks ``metadata.json`` and every row against :mod:`.schema` (types, bounded integers, finite
numbers, ordered cut-points; model names, never paths), and that the ids the tables hold refer
to clusters that exist; a model the metadata names is loaded only from an installed package or
with the user's consent, never from a folder of that name in the current folder.
"""

from __future__ import annotations

import gzip
import inspect
import io
import json
import os
from typing import Iterable

from ..core.errors import InputError
from ..io.files import GZIP_RATIO_ENV, numbered_lines, parse_json, read_bytes, utf8_error
from ..io.outputs import atomic_write
from .fingerprint import corpus_fingerprint
from .schema import metadata_problem, model_name_problem, row_problem

__all__ = ["StructureArtifact", "ARTIFACT_FORMAT", "REQUEST_BOUNDS"]

ARTIFACT_FORMAT = "mteb-stratified/structure/3"
TABLES = ("entities", "doc_entities", "clusters", "doc_clusters", "cluster_levels")


def _clean(value):
    """Plain JSON types with string keys (floats keep their shortest exact repr)."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _dumps(obj) -> str:
    return json.dumps(_clean(obj), sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _write_jsonl_gz(path: str, rows: Iterable[dict]) -> None:
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
        for row in rows:
            gz.write((_dumps(row) + "\n").encode("utf-8"))
    with atomic_write(path, "wb") as fh:
        fh.write(raw.getvalue())


#: Upper bounds of the request sizes an LLM-built artifact records (completion tokens and
#: characters of the text sent per query): the recorded sizes are taken up to these, so a shared
#: file cannot make the user's paid endpoint answer longer requests.
REQUEST_BOUNDS = {"max_tokens": 4096, "max_chars": 20000}

_REBUILD = ("rebuild the artifact with `mteb-stratified structure --corpus ... --out DIR` (delete "
            "the damaged folder first), or copy it again from its source")


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


def _reread(exc: InputError, path: str, line: int, what: str = "") -> InputError:
    """A reader's error (``what`` before its message) with the file's line (``line`` when the
    reader knew none) and the rebuild fix (the bound of a likely decompression bomb keeps its
    own hint too)."""
    fix = f"{exc.fix}; else {_REBUILD}" if exc.fix and GZIP_RATIO_ENV in exc.fix else _REBUILD
    message = f"{what} ({exc.message})" if what else exc.message
    return InputError(message, source=path, line=exc.line or line, fix=fix)


def _read_jsonl_gz(path: str, table: str) -> tuple[list[dict], list[int]]:
    """The rows of a table, each checked against :data:`.schema.ROWS`, and their line numbers;
    a damaged file is an InputError.

    Read through the io layer's guarded reader (decompression-bomb bound, UTF-8 with its line)
    and JSON parser (nesting depth, keys given twice); an empty table has no rows.
    """
    if not os.path.exists(path):
        raise InputError("structure table missing", source=path, fix=_REBUILD)
    rows, lines, line_no = [], [], 0
    try:
        for line_no, text in numbered_lines(path):
            try:
                row = parse_json(text, source=path, line=line_no)
            except InputError as exc:
                raise _reread(exc, path, line_no, "not a JSON line") from None
            problem = row_problem(row, table)
            if problem:
                raise InputError(problem, source=path, line=line_no, fix=_REBUILD)
            rows.append(row)
            lines.append(line_no)
    except InputError as exc:
        if exc.fix == _REBUILD:
            raise
        if not rows and exc.line is None and exc.message == "file is empty":
            return [], []
        damage = "damaged gzip table" if "gzip" in exc.message else ""
        raise _reread(exc, path, line_no + 1, damage) from None
    return rows, lines


def _read_metadata(path: str) -> dict:
    """metadata.json as a dict, read like every other input (io.files); any failure an
    InputError with the rebuild fix."""
    try:
        data = read_bytes(path)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise utf8_error(path) from None
    except InputError as exc:
        raise _reread(exc, path, 1) from None
    try:
        metadata = parse_json(text, source=path)
    except InputError as exc:
        raise _reread(exc, path, 1, "metadata.json is not valid JSON") from None
    if not isinstance(metadata, dict):
        raise InputError("metadata.json must hold a JSON object", source=path, line=1,
                         fix=_REBUILD)
    return metadata


def _check_metadata(metadata: dict, path: str) -> None:
    """metadata.json against :data:`.schema.METADATA` (and the recorded extractor parameters
    against :data:`.schema.INIT_PARAMS`): the first field that breaks it is an InputError."""
    problem = metadata_problem(metadata)
    if problem:
        raise InputError(problem, source=path, fix=_REBUILD)


_EMPTY_FIX = ("rebuild the artifact with `mteb-stratified structure --corpus BEIR_FOLDER --out "
              "DIR` (it holds at least one cluster; for a corpus where none forms, lower "
              "--min-doc-freq / --min-cluster-size or give more documents), or copy it again "
              "from its source")


def _check_ids(directory: str, tables: dict, lines: dict) -> None:
    """What the rows refer to exists: the clusters are numbered 0..n-1 (n >= 1), each once;
    a document's weights and an entity's cluster name one of them; no document is given
    twice.  Each refusal names the table and the row's line."""
    def path(table):
        return os.path.join(directory, f"{table}.jsonl.gz")

    clusters = tables["clusters"]
    n = len(clusters)
    if n == 0:
        raise InputError("the clusters table is empty: a structure artifact holds at least one "
                         "cluster (every stratum is a cluster)", source=path("clusters"),
                         fix=_EMPTY_FIX)
    seen: set = set()
    for row, line in zip(clusters, lines["clusters"]):
        c = row["id"]
        if c >= n or c in seen:
            why = "given twice" if c in seen else f"beyond the {n} clusters (ids 0..{n - 1})"
            raise InputError(f"cluster id {c} is {why}: the clusters are numbered 0..n-1, "
                             "each once", source=path("clusters"), line=line, fix=_REBUILD)
        seen.add(c)
    for row, line in zip(tables["entities"], lines["entities"]):
        if row["cluster"] >= n:
            raise InputError(f"entity {row['name'][:60]!r} is in cluster {row['cluster']}, "
                             f"beyond the {n} clusters (ids 0..{n - 1}, or -1 for none)",
                             source=path("entities"), line=line, fix=_REBUILD)
    for table in ("doc_entities", "doc_clusters"):
        docs: set = set()
        for row, line in zip(tables[table], lines[table]):
            if row["doc_id"] in docs:
                raise InputError(f"document {row['doc_id'][:60]!r} is given twice",
                                 source=path(table), line=line, fix=_REBUILD)
            docs.add(row["doc_id"])
            if table == "doc_clusters":
                beyond = next((c for c in row["weights"] if int(c) >= n), None)
                if beyond is not None:
                    raise InputError(f"document {row['doc_id'][:60]!r} has a weight on cluster "
                                     f"{beyond}, beyond the {n} clusters (ids 0..{n - 1})",
                                     source=path(table), line=line, fix=_REBUILD)


def _tree_of(rows: list, n_clusters: int, source):
    """The :class:`~mteb_stratified.core.hierarchy.ClusterTree` of ``cluster_levels`` rows."""
    import numpy as np

    from ..core.hierarchy import ClusterTree

    if not rows:
        if n_clusters > 1:
            raise InputError("cluster_levels is empty but the artifact has "
                             f"{n_clusters} clusters: the cluster tree is missing",
                             source=source, fix=_REBUILD)
        return ClusterTree.flat(max(n_clusters, 1))
    by_level: dict = {}
    for r in rows:
        by_level.setdefault(int(r["level"]), []).append(r)
    parents = []
    below = n_clusters
    for level in range(1, len(by_level) + 1):
        units = sorted(by_level.get(level, []), key=lambda r: r["id"])
        if not units or [r["id"] for r in units] != list(range(len(units))):
            raise InputError(f"cluster_levels: level {level} is missing or its ids are not "
                             "0..n-1", source=source, fix=_REBUILD)
        p = np.full(below, -1, dtype=np.int64)
        for r in units:
            for c in r["children"]:
                if c >= below or p[c] >= 0:
                    raise InputError(f"cluster_levels: level {level} unit {r['id']} names "
                                     f"child {c} that does not exist or has two parents",
                                     source=source, fix=_REBUILD)
                p[c] = r["id"]
        if (p < 0).any():
            raise InputError(f"cluster_levels: {int((p < 0).sum())} units of level "
                             f"{level - 1} have no parent", source=source, fix=_REBUILD)
        parents.append(p)
        below = len(units)
    try:
        return ClusterTree(n_clusters, tuple(parents))
    except InputError as exc:
        raise InputError(f"cluster_levels: {exc.message}", source=source, fix=_REBUILD) from None


class StructureArtifact:
    """The corpus map: entities, clusters, document -> cluster weights.

    Attributes used downstream: ``doc_cluster_weights`` ``{doc_id: {cluster: weight}}``,
    ``cluster_mass`` ``{cluster: mass}``, ``cluster_labels`` ``{cluster: label}``,
    ``doc_entities`` ``{doc_id: set of names}``, ``corpus_fingerprint``, ``metadata``; and
    :meth:`extract_entities` for a query.
    """

    def __init__(self, metadata: dict, entities: list[dict], doc_entities: dict,
                 clusters: list[dict], doc_cluster_weights: dict,
                 cluster_levels: list[dict] | None = None) -> None:
        self.metadata = metadata
        self.entities = entities
        self.doc_entities = {d: set(v) for d, v in doc_entities.items()}
        self.clusters = clusters
        self.doc_cluster_weights = {d: {int(c): float(w) for c, w in ws.items()}
                                    for d, ws in doc_cluster_weights.items()}
        self.cluster_mass = {int(c["id"]): float(c["mass"]) for c in clusters}
        self.cluster_labels = {int(c["id"]): str(c["label"]) for c in clusters}
        self.entity_cluster = {e["name"]: int(e["cluster"]) for e in entities}
        self.cluster_levels = list(cluster_levels or [])
        self._tree = None
        self._alias = {}
        for e in entities:
            for alias in e.get("aliases", ()):
                self._alias[alias] = e["name"]
        self._extractor = None
        self._endpoint: dict | None = None
        self._notify = None
        self._meta_path: str | None = None
        self._allowed_model: str | None = None

    # -- identity -----------------------------------------------------------------------------
    @property
    def corpus_fingerprint(self) -> str:
        return self.metadata["corpus"]["fingerprint"]

    @property
    def n_clusters(self) -> int:
        return len(self.clusters)

    @property
    def cluster_tree(self):
        """The :class:`~mteb_stratified.core.hierarchy.ClusterTree` of the clusters (from the
        ``cluster_levels`` table; an artifact built in memory without one: the fine clusters
        under one root).  A table that is not a tree is an :class:`InputError`."""
        if self._tree is None:
            from ..core.hierarchy import ClusterTree
            self._tree = (_tree_of(self.cluster_levels, self.n_clusters, self._meta_path)
                          if self.cluster_levels else ClusterTree.flat(max(self.n_clusters, 1)))
        return self._tree

    def unit_label(self, level: int, unit: int) -> str | None:
        """The label of a unit of the cluster tree (level 0: a fine cluster)."""
        if level == 0:
            return self.cluster_labels.get(int(unit))
        return self._units().get((int(level), int(unit)), {}).get("label")

    def unit_mass(self, level: int, unit: int) -> float:
        if level == 0:
            return self.cluster_mass.get(int(unit), 0.0)
        return float(self._units().get((int(level), int(unit)), {}).get("mass", 0.0))

    def _units(self) -> dict:
        cached = self.__dict__.get("_unit_rows")
        if cached is None:
            cached = {(int(r["level"]), int(r["id"])): r for r in self.cluster_levels}
            self.__dict__["_unit_rows"] = cached
        return cached

    @property
    def bins(self) -> dict:
        """Per-corpus bin cut-points (e.g. for Δ and J), stored in the metadata."""
        return dict(self.metadata.get("bins", {}))

    @property
    def embedding_model(self) -> str | None:
        """The recorded embedding model: None (the packaged one), the packaged one by name, or
        the model hub name or model folder the user gave themselves
        (:meth:`allow_embedding_model`).  Any other is refused: loading it would download
        weights (pickles can run code) or open a folder chosen by a shared file; a name is
        never taken as a folder of the current folder."""
        return self._consented_model(self.metadata["parameters"].get("embedding_model"),
                                     "the embedding model", "--embedding-model")

    def _consented_model(self, name, what: str, option: str) -> str | None:
        """``name``, a sentence-transformers model the artifact records, when it is the packaged
        one or exactly the one the user gave (``option``): a hub name, or a model folder (a path
        the artifact records is opened only when the user gives that path themselves).  A name
        that is also a folder of the current folder is refused (the loader would open it)."""
        from .embed import DEFAULT_MODEL
        if name is None or name == DEFAULT_MODEL:
            return name
        is_path = model_name_problem(name) is not None
        if name == self._allowed_model and (is_path or not os.path.exists(name)):
            return name  # the user named this model, or this folder, themselves
        if is_path or os.path.exists(name):
            raise InputError(f"metadata.json records {what} {name!r}, a path: a "
                             "structure artifact never chooses a file to open",
                             source=self._meta_path,
                             fix=f"if it is your own model folder, give it yourself: {option} "
                                 f"{name}; else rebuild the artifact with `mteb-stratified "
                                 f"structure {option} NAME` (a model hub name), or use an "
                                 "artifact from a source you trust")
        if name != self._allowed_model:
            given = ("" if self._allowed_model is None
                     else f" ({option} {self._allowed_model!r} was given)")
            raise InputError(f"metadata.json records {what} {name!r}, not the "
                             f"packaged {DEFAULT_MODEL}{given}: a structure artifact never "
                             "chooses a model to download and load", source=self._meta_path,
                             fix=f"if you trust that model, allow it with {option} "
                                 f"{name}; else use an artifact built with the packaged model")
        return name

    def allow_embedding_model(self, name: str | None) -> None:
        """Let :attr:`embedding_model` return ``name`` when the artifact records it (the user
        named that model themselves, e.g. ``--embedding-model NAME``)."""
        self._allowed_model = name

    def canonical(self, name: str) -> str:
        """The canonical name of a normalised entity name (near-duplicates merged)."""
        return self._alias.get(name, name)

    def canonical_doc_entities(self) -> dict:
        """``{doc_id: frozenset of canonical entity names}`` E(d), the sets the strata compare
        (computed once)."""
        cached = self.__dict__.get("_canonical_doc_entities")
        if cached is None:
            cached = {d: frozenset(self.canonical(e) for e in ents)
                      for d, ents in self.doc_entities.items()}
            self.__dict__["_canonical_doc_entities"] = cached
        return cached

    def check_corpus(self, corpus: dict, *, source: str | None = None) -> None:
        """Raise :class:`InputError` if ``corpus`` is not the corpus the artifact was built on."""
        got = corpus_fingerprint(corpus)
        if got != self.corpus_fingerprint:
            raise InputError(
                f"corpus fingerprint {got[:19]}… does not match the structure artifact's "
                f"{self.corpus_fingerprint[:19]}… ({len(corpus)} vs "
                f"{self.metadata['corpus']['n_docs']} documents)", source=source,
                fix="build the structure for this corpus with `mteb-stratified structure "
                    "--corpus ... --out ...`, or pass the artifact built from it")

    # -- query side ---------------------------------------------------------------------------
    # metadata.json records how the artifact was built, for provenance only: the extractor for
    # queries is built from the user's own arguments, never from an endpoint, key or path
    # written in a (possibly shared) file.
    def set_extractor(self, extractor) -> None:
        """Use ``extractor`` for :meth:`extract_entities` (e.g. an LLM extractor with its key)."""
        self._extractor = extractor

    def use_endpoint(self, settings: dict, *, notify=None) -> None:
        """The user's own LLM endpoint for the queries of an LLM-built artifact.

        ``settings`` are :class:`~.llm.LLMExtractor` arguments (``base_url``, ``model``,
        ``api_key``, ``cache_path``, ``timeout``, ...; unset ones fall back to the user's
        environment).  The extractor is built when a query needs it; ``notify(line)`` is then
        told when the endpoint or model differs from the one the artifact records.
        """
        self._endpoint, self._notify = dict(settings), notify

    def query_extractor(self):
        """The extractor of :meth:`extract_entities`: the one set, else one built from the
        user's settings (:meth:`use_endpoint`) and the recorded extractor kind."""
        if self._extractor is None:
            info = self.metadata["extractor"]
            if info["kind"] == "llm":
                self._extractor = self._llm_extractor(info)
            else:
                from .registry import extractor_class
                try:
                    cls = extractor_class(info["kind"])
                except InputError as exc:  # not installed here: say which file names it
                    raise InputError(f"extractor.kind is {info['kind']!r}: {exc.message}",
                                     source=self._meta_path, fix=exc.fix) from None
                self._extractor = cls(**self._recorded_params(info, cls))
        return self._extractor

    def _recorded_params(self, info: dict, cls) -> dict:
        """The recorded constructor parameters of ``cls``, refused when one could name a path
        or server, when a recorded model is not one the user has (an installed spaCy package;
        a sentence-transformers model as for :attr:`embedding_model`), or when they do not fit
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
                    "we read or connect", source=self._meta_path,
                    fix="rebuild the artifact with your own settings (`mteb-stratified "
                        "structure`), or use an artifact from a source you trust")
        if issubclass(cls, SpacyNounChunkExtractor) and "model" in params:
            self._check_spacy_model(params["model"])
        if issubclass(cls, KeyBERTExtractor):
            self._consented_model(params.get("model"), "the KeyBERT model "
                                  "(extractor.init_params.model)", "--embedding-model")
        try:
            inspect.signature(cls).bind(**params)
        except TypeError as exc:
            raise InputError(f"extractor.init_params do not fit the {info['kind']!r} extractor "
                             f"({cls.__module__}.{cls.__qualname__}): {exc}",
                             source=self._meta_path, fix=_REBUILD) from None
        return dict(params)

    def _check_spacy_model(self, name: str) -> None:
        """A spaCy model the artifact records must be an installed model package: a name is
        never looked up as a folder (spaCy would load ``./name`` from the current folder)."""
        from .extractors import spacy_install_command, spacy_model_dir
        if spacy_model_dir(name) is None:
            raise InputError(
                f"extractor.init_params.model is {name!r}, a spaCy model that is not an "
                "installed package here (a model an artifact records is only ever loaded from "
                "an installed package, never from a folder)", source=self._meta_path,
                fix=f"if you trust that model, install it ({spacy_install_command(name)}); else "
                    "rebuild the artifact with the packaged spaCy model: `mteb-stratified "
                    "structure --corpus BEIR_FOLDER --out DIR`")

    def _llm_extractor(self, info: dict):
        """The user's LLM extractor; the recorded request sizes are kept up to
        :data:`REQUEST_BOUNDS` unless the user's settings give their own."""
        from .llm import LLMExtractor
        ep = self._endpoint or {}
        model = ep.get("model") or os.environ.get("OPENAI_MODEL")
        key = ep.get("api_key") or os.environ.get("OPENAI_API_KEY")
        if self._endpoint is None or not model or not (key or ep.get("provider") is not None):
            raise InputError(
                "this structure artifact was built with the LLM extractor, so the query "
                "entities need an LLM endpoint of your own (the one recorded in its "
                "metadata.json is never contacted)", source=self._meta_path,
                fix="pass --base-url URL --model NAME --api-key KEY (or set OPENAI_BASE_URL, "
                    "OPENAI_MODEL and OPENAI_API_KEY)")
        recorded = info.get("params") if isinstance(info.get("params"), dict) else {}
        sizes = {k: min(recorded[k], bound) for k, bound in REQUEST_BOUNDS.items()
                 if not _bad_type(recorded.get(k), int) and recorded[k] >= 1}
        extractor = LLMExtractor(**{**sizes, **ep})
        init = info.get("init_params") if isinstance(info.get("init_params"), dict) else {}
        was = (_url(init.get("base_url")), recorded.get("model", init.get("model")))
        now = (_url(extractor.base_url), extractor.model)
        if was != now and self._notify is not None:
            self._notify(f"note: the artifact's entities were extracted by model {was[1]!r} at "
                         f"{was[0] or 'the default endpoint'} (recorded, not contacted); the "
                         f"query entities now come from a different extractor: model "
                         f"{now[1]!r} at {now[0] or 'the default endpoint'}")
        return extractor

    def extract_entities(self, text: str) -> set[str]:
        """The normalised, canonical entity names of ``text``, with the artifact's settings.

        Abbreviations are expanded from definitions in ``text`` itself, then from the corpus
        abbreviations stored in the artifact; corpus stop-entities are dropped.
        """
        return self.extract_entities_batch([text])[0]

    def extract_entities_batch(self, texts) -> list[set[str]]:
        """:meth:`extract_entities` for many texts at once (one extractor pass)."""
        from .normalise import find_abbreviations, normalise_entities
        texts = list(texts)
        raw = self.query_extractor().extract(texts)
        corpus_abbreviations = self.metadata.get("abbreviations", {})
        stop = self.metadata.get("stop_entities", ())
        out = []
        for text, entities in zip(texts, raw):
            abbreviations = dict(corpus_abbreviations)
            abbreviations.update(find_abbreviations(text))
            names = normalise_entities(entities, abbreviations, self.metadata["parameters"],
                                       stop=stop)
            out.append({self.canonical(n) for n in names})
        return out

    # -- persistence --------------------------------------------------------------------------
    def save(self, directory: str) -> str:
        os.makedirs(directory, exist_ok=True)
        _write_jsonl_gz(os.path.join(directory, "entities.jsonl.gz"), self.entities)
        _write_jsonl_gz(os.path.join(directory, "doc_entities.jsonl.gz"),
                        ({"doc_id": d, "entities": sorted(self.doc_entities[d])}
                         for d in sorted(self.doc_entities)))
        _write_jsonl_gz(os.path.join(directory, "clusters.jsonl.gz"), self.clusters)
        _write_jsonl_gz(os.path.join(directory, "cluster_levels.jsonl.gz"), self.cluster_levels)
        _write_jsonl_gz(os.path.join(directory, "doc_clusters.jsonl.gz"),
                        ({"doc_id": d, "weights": {str(c): w for c, w in
                                                   sorted(self.doc_cluster_weights[d].items())}}
                         for d in sorted(self.doc_cluster_weights)))
        # metadata last: its presence marks a complete artifact
        with atomic_write(os.path.join(directory, "metadata.json"), "w", encoding="utf-8") as fh:
            fh.write(json.dumps(_clean(self.metadata), sort_keys=True, ensure_ascii=False,
                                indent=1) + "\n")
        return directory

    @classmethod
    def load(cls, directory: str, *, corpus: dict | None = None) -> "StructureArtifact":
        """Load an artifact folder; with ``corpus``, also check its fingerprint."""
        directory = os.fspath(directory)
        meta_path = os.path.join(directory, "metadata.json")
        if not os.path.exists(meta_path):
            raise InputError("not a structure artifact (no metadata.json)", source=directory,
                             fix="build one with `mteb-stratified structure --corpus ... "
                                 "--out DIR`")
        metadata = _read_metadata(meta_path)
        found = metadata.get("format")
        if found != ARTIFACT_FORMAT:
            older = isinstance(found, str) and found.startswith("mteb-stratified/structure/")
            what = (f"a structure artifact of an older format ({found}); this version reads "
                    f"{ARTIFACT_FORMAT}, which adds the cluster tree that strata are estimated "
                    "on (cluster_levels.jsonl.gz: clusters merged until each stratum holds "
                    "enough queries to test); it cannot be derived from the older files"
                    if older else f"unknown artifact format {found!r}")
            raise InputError(what, source=meta_path,
                             fix="rebuild it from its corpus: `mteb-stratified structure --corpus "
                                 "BEIR_FOLDER --out DIR` (the same settings are kept in its "
                                 "metadata.json 'parameters')")
        _check_metadata(metadata, meta_path)
        read = {t: _read_jsonl_gz(os.path.join(directory, f"{t}.jsonl.gz"), t) for t in TABLES}
        tables = {t: rows for t, (rows, _) in read.items()}
        _check_ids(directory, tables, {t: lines for t, (_, lines) in read.items()})
        entities, clusters = tables["entities"], tables["clusters"]
        doc_entities = {r["doc_id"]: r["entities"] for r in tables["doc_entities"]}
        weights = {r["doc_id"]: r["weights"] for r in tables["doc_clusters"]}
        art = cls(metadata, entities, doc_entities, clusters, weights, tables["cluster_levels"])
        art._meta_path = meta_path
        art._tree = _tree_of(art.cluster_levels, art.n_clusters,
                             os.path.join(directory, "cluster_levels.jsonl.gz"))
        if corpus is not None:
            art.check_corpus(corpus, source=directory)
        return art

    @classmethod
    def bundled(cls, name: str = "nfcorpus") -> "StructureArtifact":
        """The structure artifact bundled with the package (NFCorpus, offline extractor)."""
        from importlib import resources
        path = resources.files("mteb_stratified") / "data" / name / "structure"
        return cls.load(str(path))

    def __repr__(self) -> str:
        return (f"StructureArtifact({self.metadata['corpus']['n_docs']} docs, "
                f"{len(self.entities)} entities, {self.n_clusters} clusters)")
