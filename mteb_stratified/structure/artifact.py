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
* ``clusters.jsonl.gz``: the leaves (the finest level, where coverage looks):
  ``{id, label, terms, titles, central_docs, size, n_docs, mass, top_entities}`` (``terms``:
  the 10 most distinctive, :mod:`.terms`; ``label`` made from them; ``titles`` of the 3 most
  central documents, ``central_docs`` their ids; ``top_entities`` for provenance);
* ``doc_clusters.jsonl.gz``: ``{doc_id, weights: {cluster: m_d(c)}}``;
* ``cluster_levels.jsonl.gz``: the cluster tree above the fine clusters
  (:mod:`mteb_stratified.core.stats.hierarchy`), one row per unit of each level ℓ ≥ 1:
  ``{level, id, children, clusters, label, terms, titles, central_docs, mass, top_entities}``
  (``children``: the ids of the level below it holds; ``clusters``: its leaves).

The metadata records how the artifact was built, for provenance only: an artifact may come from
someone else, so reusing it never contacts an endpoint, uses a key or opens a path written in it
(the extractor of queries is built from the artifact and the user's own inputs by the code that
needs it: :mod:`.query_entities`).  A :class:`StructureArtifact` is read-only data: its
attributes are never rebound, its metadata and tables are read-only containers, and a changed
artifact is a new object (:meth:`StructureArtifact.with_bins`).  Every file is written through
a temp file unique to the process; a damaged file is an :class:`InputError` naming the file and
line.  A save is crash-safe: it removes the old ``metadata.json`` before it replaces the first
table and writes the new one last, with a completion record (``files``: every table's size and
sha256), so a folder mixing two builds' files (a save killed part-way, or running now) is
refused by :meth:`~StructureArtifact.load` with the rebuild command, never used.  Loading
checks ``metadata.json`` and every row against :mod:`.schema` (types, bounded integers,
finite numbers, ordered cut-points; model names, never paths), and that the ids the tables
hold refer to clusters that exist; a model the metadata names is loaded only from an
installed package or with the user's consent, never from a folder of that name in the current
folder (:mod:`.query_entities`).
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import io
import json
import os
from typing import Iterable

from ..core.errors import InputError
from ..core.jsonsafe import ReadOnlyDict, frozen_json
from ..io.files import GZIP_RATIO_ENV, numbered_lines, parse_json, read_bytes, utf8_error
from ..io.outputs import atomic_write, fsync_dir, remove_orphan_temps
from .fingerprint import corpus_fingerprint
from .schema import REBUILD_FIX, REQUEST_BOUNDS, metadata_problem, row_problem

__all__ = ["StructureArtifact", "ARTIFACT_FORMAT", "REQUEST_BOUNDS"]

ARTIFACT_FORMAT = "mteb-stratified/structure/4"
#: What each format added, for the message that refuses an older one.
FORMAT_ADDED = {
    "mteb-stratified/structure/3": "the cluster tree that strata are estimated on "
                                   "(cluster_levels.jsonl.gz)",
    "mteb-stratified/structure/4": "leaves fine enough for coverage (clusters.jsonl.gz) and "
                                   "each cluster's distinctive terms, label and central "
                                   "titles at every level ('terms', 'titles')",
}
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


def _jsonl_gz(rows: Iterable[dict]) -> bytes:
    """The bytes of a table: one JSON row a line, gzip-compressed without a timestamp."""
    raw = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
        for row in rows:
            gz.write((_dumps(row) + "\n").encode("utf-8"))
    return raw.getvalue()


#: The key of metadata.json that records the files of the build it completes (not part of
#: the in-memory metadata: :meth:`StructureArtifact.save` writes it, ``load`` checks it).
COMPLETION_KEY = "files"


def _record(data: bytes) -> dict:
    return {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


_REBUILD = REBUILD_FIX


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


_COMPLETE_FIX = ("rebuild it: `mteb-stratified structure --corpus BEIR_FOLDER --out {dir}` with "
                 "the settings in its metadata.json 'parameters' (a folder that is not a "
                 "complete artifact is never reused: it is built again), or copy it again from "
                 "its source")
_HEX = frozenset("0123456789abcdef")


def _digest(path: str) -> tuple[dict, tuple] | None:
    """The size and sha256 of the file at ``path`` and its identity (device, inode, size,
    mtime) as read; None when it cannot be read (the table reader then says why)."""
    digest, size = hashlib.sha256(), 0
    try:
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
                size += len(chunk)
            st = os.fstat(fh.fileno())
    except OSError:
        return None
    return ({"bytes": size, "sha256": digest.hexdigest()},
            (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))


def _identity(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns


def _record_problem(record) -> str | None:
    """What is wrong with the completion record of metadata.json, or None."""
    if not isinstance(record, dict):
        return ("metadata.json has no completion record ('files': each table's size and "
                "sha256, written last by a save), so its tables cannot be checked to come "
                "from one build (an artifact saved by an earlier version, or a metadata.json "
                "written by hand)")
    names = sorted(f"{t}.jsonl.gz" for t in TABLES)
    if sorted(record) != names:
        return (f"metadata.json 'files' names {sorted(record)}: expected exactly "
                f"{', '.join(names)}")
    for name, entry in sorted(record.items()):
        ok = (isinstance(entry, dict) and sorted(entry) == ["bytes", "sha256"]
              and type(entry["bytes"]) is int and entry["bytes"] >= 0
              and isinstance(entry["sha256"], str) and len(entry["sha256"]) == 64
              and set(entry["sha256"]) <= _HEX)
        if not ok:
            return (f"metadata.json 'files'.{name} is not a table's record: expected "
                    '{"bytes": SIZE, "sha256": 64 hex digits}')
    return None


def _check_complete(directory: str, metadata: dict, digests: dict) -> None:
    """The tables read are the ones metadata.json records (size and sha256, taken as each was
    read, and unchanged while it was parsed); else an InputError naming the first table that
    differs: the folder mixes two builds (a save interrupted, or running now)."""
    meta_path = os.path.join(directory, "metadata.json")
    fix = _COMPLETE_FIX.format(dir=directory)
    record = metadata.get(COMPLETION_KEY)
    problem = _record_problem(record)
    if problem:
        raise InputError(problem, source=meta_path, fix=fix)
    for table in TABLES:
        name = f"{table}.jsonl.gz"
        path = os.path.join(directory, name)
        got, identity = digests[table] or ({"bytes": -1, "sha256": "?"}, None)
        want = record[name]
        if identity is None or _identity(path) != identity:
            raise InputError(f"{name} changed while it was read (a save into this folder is "
                             "running?): it is not used", source=path, fix=fix)
        if got != want:
            raise InputError(
                f"{name} is not the table metadata.json records ({got['bytes']} bytes, sha256 "
                f"{got['sha256'][:16]}…; recorded: {want['bytes']} bytes, sha256 "
                f"{want['sha256'][:16]}…): the folder mixes files of two builds (a save into "
                "it was interrupted, or is running now), so it is not used",
                source=path, fix=fix)


def _no_metadata(directory: str) -> InputError:
    """The error for a folder without metadata.json: an interrupted save when tables are
    there, else not an artifact."""
    if any(os.path.exists(os.path.join(directory, f"{t}.jsonl.gz")) for t in TABLES):
        return InputError("an incomplete structure artifact: its tables are there but not "
                          "metadata.json, which a save removes first and writes last (a save "
                          "into this folder was interrupted, or is running now)",
                          source=directory, fix=_COMPLETE_FIX.format(dir=directory))
    return InputError("not a structure artifact (no metadata.json)", source=directory,
                      fix="build one with `mteb-stratified structure --corpus ... --out DIR`")


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
    """The :class:`~mteb_stratified.core.stats.hierarchy.ClusterTree` of ``cluster_levels`` rows."""
    import numpy as np

    from ..core.stats.hierarchy import ClusterTree

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
    """The corpus map: entities, clusters, document -> cluster weights.  Read-only data.

    Attributes used downstream: ``doc_cluster_weights`` ``{doc_id: {cluster: weight}}``,
    ``cluster_mass`` ``{cluster: mass}``, ``cluster_labels`` ``{cluster: label}``,
    ``doc_entities`` ``{doc_id: frozenset of names}``, ``corpus_fingerprint``, ``metadata``; and
    :meth:`extract_entities` for a query, with an extractor that
    :func:`~.query_entities.query_extractor` builds.  None of them can be rebound or changed
    (the containers are read-only); :meth:`with_bins` gives a new artifact.
    """

    def __init__(self, metadata: dict, entities: list[dict], doc_entities: dict,
                 clusters: list[dict], doc_cluster_weights: dict,
                 cluster_levels: list[dict] | None = None, *, source: str | None = None) -> None:
        alias = {}
        for e in entities:
            for name in e.get("aliases", ()):
                alias[name] = e["name"]
        self.__dict__.update(
            metadata=frozen_json(metadata), entities=frozen_json(entities),
            doc_entities=ReadOnlyDict((d, frozenset(v)) for d, v in doc_entities.items()),
            clusters=frozen_json(clusters),
            doc_cluster_weights=ReadOnlyDict(
                (d, ReadOnlyDict((int(c), float(w)) for c, w in ws.items()))
                for d, ws in doc_cluster_weights.items()),
            cluster_mass=ReadOnlyDict((int(c["id"]), float(c["mass"])) for c in clusters),
            cluster_labels=ReadOnlyDict((int(c["id"]), str(c["label"])) for c in clusters),
            entity_cluster=ReadOnlyDict((e["name"], int(e["cluster"])) for e in entities),
            cluster_levels=frozen_json(list(cluster_levels or [])),
            _alias=alias, _meta_path=source, _tree=None)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"a StructureArtifact is read-only: {name!r} cannot be set (make "
                             "a changed copy, e.g. with_bins, instead)")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"a StructureArtifact is read-only: {name!r} cannot be deleted")

    # -- identity -----------------------------------------------------------------------------
    @property
    def corpus_fingerprint(self) -> str:
        return self.metadata["corpus"]["fingerprint"]

    @property
    def source(self) -> str | None:
        """The ``metadata.json`` the artifact was loaded from (None: built in memory)."""
        return self._meta_path

    @property
    def n_clusters(self) -> int:
        return len(self.clusters)

    @property
    def cluster_tree(self):
        """The :class:`~mteb_stratified.core.stats.hierarchy.ClusterTree` of the clusters (from the
        ``cluster_levels`` table; an artifact built in memory without one: the fine clusters
        under one root).  A table that is not a tree is an :class:`InputError`."""
        if self._tree is None:
            from ..core.stats.hierarchy import ClusterTree
            self.__dict__["_tree"] = (
                _tree_of(self.cluster_levels, self.n_clusters, self._meta_path)
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

    def with_bins(self, bins: dict | None) -> "StructureArtifact":
        """A new artifact: this one with ``bins`` as its metadata's cut-points (None: none
        stored); this one is left as it is.  The tables are shared (they are read-only)."""
        metadata = {k: v for k, v in self.metadata.items() if k != "bins"}
        if bins is not None:
            metadata["bins"] = bins
        new = copy.copy(self)
        new.__dict__["metadata"] = frozen_json(metadata)
        return new

    def with_metadata(self, key: str, value) -> "StructureArtifact":
        """A new artifact: this one with its metadata's ``key`` set to ``value`` (None:
        removed), e.g. a provenance record the command adds; this one is left as it is."""
        metadata = {k: v for k, v in self.metadata.items() if k != key}
        if value is not None:
            metadata[key] = value
        new = copy.copy(self)
        new.__dict__["metadata"] = frozen_json(metadata)
        return new

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
    def extract_entities(self, text: str, extractor=None) -> set[str]:
        """The normalised, canonical entity names of ``text``, with the artifact's settings.

        ``extractor`` reads the raw entities: one :func:`~.query_entities.query_extractor`
        built from this artifact and the user's inputs (an endpoint, a model they name); None:
        the recorded one, built without user input (:func:`~.query_entities.recorded_extractor`;
        an LLM-built artifact needs the user's endpoint, so it is refused).  Abbreviations are
        expanded from definitions in ``text`` itself, then from the corpus abbreviations stored
        in the artifact; corpus stop-entities are dropped.
        """
        return self.extract_entities_batch([text], extractor)[0]

    def extract_entities_batch(self, texts, extractor=None) -> list[set[str]]:
        """:meth:`extract_entities` for many texts at once (one extractor pass)."""
        from .normalise import find_abbreviations, normalise_entities
        if extractor is None:
            from .query_entities import recorded_extractor
            extractor = recorded_extractor(self)
        texts = list(texts)
        raw = extractor.extract(texts)
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
        """Write the artifact into ``directory``, crash-safe: a kill at any moment leaves the
        folder holding the old artifact, the new one, or no ``metadata.json`` (which ``load``
        refuses): never one build's metadata with another's tables.

        Every table is made in memory first; then the old ``metadata.json`` (the completion
        marker) is removed and the folder synced before the first table is replaced; each
        table is written atomically; ``metadata.json`` comes last, recording every table's
        size and sha256 (:data:`COMPLETION_KEY`), which :meth:`load` checks.  Temp files a
        killed save left in the folder are removed first
        (:func:`~mteb_stratified.io.outputs.remove_orphan_temps`)."""
        os.makedirs(directory, exist_ok=True)
        remove_orphan_temps(directory)
        tables = {
            "entities": _jsonl_gz(self.entities),
            "doc_entities": _jsonl_gz({"doc_id": d, "entities": sorted(self.doc_entities[d])}
                                      for d in sorted(self.doc_entities)),
            "clusters": _jsonl_gz(self.clusters),
            "cluster_levels": _jsonl_gz(self.cluster_levels),
            "doc_clusters": _jsonl_gz(
                {"doc_id": d, "weights": {str(c): w for c, w in
                                          sorted(self.doc_cluster_weights[d].items())}}
                for d in sorted(self.doc_cluster_weights)),
        }
        metadata = {k: v for k, v in self.metadata.items() if k != COMPLETION_KEY}
        metadata[COMPLETION_KEY] = {f"{t}.jsonl.gz": _record(tables[t]) for t in TABLES}
        text = json.dumps(_clean(metadata), sort_keys=True, ensure_ascii=False, indent=1) + "\n"
        meta_path = os.path.join(directory, "metadata.json")
        try:
            os.unlink(meta_path)  # the folder is not a complete artifact from here on
        except FileNotFoundError:
            pass
        fsync_dir(directory)
        for table in TABLES:
            with atomic_write(os.path.join(directory, f"{table}.jsonl.gz"), "wb") as fh:
                fh.write(tables[table])
        fsync_dir(directory)
        # metadata last: its presence marks a complete artifact, and it names every table
        with atomic_write(meta_path, "w", encoding="utf-8") as fh:
            fh.write(text)
        fsync_dir(directory)
        return directory

    @classmethod
    def load(cls, directory: str, *, corpus: dict | None = None) -> "StructureArtifact":
        """Load an artifact folder; with ``corpus``, also check its fingerprint."""
        directory = os.fspath(directory)
        meta_path = os.path.join(directory, "metadata.json")
        if not os.path.exists(meta_path):
            raise _no_metadata(directory)
        metadata = _read_metadata(meta_path)
        found = metadata.get("format")
        if found != ARTIFACT_FORMAT:
            older = isinstance(found, str) and found.startswith("mteb-stratified/structure/")
            added = [v for k, v in FORMAT_ADDED.items() if not older or k > found]
            what = (f"a structure artifact of an older format ({found}); this version reads "
                    f"{ARTIFACT_FORMAT}, which adds {'; and '.join(added)}; they cannot be "
                    "derived from the older files"
                    if older else f"unknown artifact format {found!r}")
            raise InputError(what, source=meta_path,
                             fix="rebuild it from its corpus: `mteb-stratified structure --corpus "
                                 "BEIR_FOLDER --out DIR` (the same settings are kept in its "
                                 "metadata.json 'parameters')")
        _check_metadata(metadata, meta_path)
        problem = _record_problem(metadata.get(COMPLETION_KEY))
        if problem:  # before any table is parsed: an older save, or a hand-made metadata.json
            raise InputError(problem, source=meta_path, fix=_COMPLETE_FIX.format(dir=directory))
        digests, read = {}, {}
        for t in TABLES:  # each table's checksum as it is read: checked against the record
            path = os.path.join(directory, f"{t}.jsonl.gz")
            digests[t] = _digest(path)
            read[t] = _read_jsonl_gz(path, t)
        tables = {t: rows for t, (rows, _) in read.items()}
        _check_ids(directory, tables, {t: lines for t, (_, lines) in read.items()})
        entities, clusters = tables["entities"], tables["clusters"]
        doc_entities = {r["doc_id"]: r["entities"] for r in tables["doc_entities"]}
        weights = {r["doc_id"]: r["weights"] for r in tables["doc_clusters"]}
        tree = _tree_of(tables["cluster_levels"], len(clusters),
                        os.path.join(directory, "cluster_levels.jsonl.gz"))
        _check_complete(directory, metadata, digests)  # never one build's metadata, another's rows
        metadata = {k: v for k, v in metadata.items() if k != COMPLETION_KEY}
        art = cls(metadata, entities, doc_entities, clusters, weights, tables["cluster_levels"],
                  source=meta_path)
        art.__dict__["_tree"] = tree
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
