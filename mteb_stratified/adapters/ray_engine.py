"""The Ray engine of the structure pipeline: extraction and embedding as Ray Data pipelines.

``mteb-stratified structure --engine ray [--address auto|HOST:PORT]`` builds the same artifact
as the single-machine path, byte for byte (on nodes of one CPU type, with the same library
versions: the workers check the versions), with the per-document steps spread over a Ray
cluster's workers (:mod:`mteb_stratified.structure.engine` says which steps those are):

* **extraction**: the corpus is cut into the pipeline's chunks (``chunk_size`` documents, in
  document-id order); each chunk is one row of a Ray dataset, mapped by an actor pool of
  ``workers`` actors (one CPU each) that load the extractor once and run
  :func:`~mteb_stratified.structure.extraction.extract_rows` on it.  A chunk is the unit of
  work of both engines, so every document is parsed in the same batch either way.  The rows
  stream back to the driver, which checkpoints them as they arrive (``OUT/.work``): a driver
  that crashes resumes where it stopped, like the single-machine path.
* **LLM extraction**: the driver's answer cache stays the one source of truth.  The driver
  looks every document up in it first; only the documents without an answer go to the
  workers, which call the endpoint (``--concurrency`` requests per worker) and send the
  answers back in groups of ``--concurrency``; the driver stores each group as it arrives,
  then builds the rows from its cache.  An endpoint that refuses or cannot be reached from a
  worker stops the run with its error, after the answers that came are stored.  A restarted
  job asks again only for the answers that never reached the driver.
* **embedding**: the names are cut into the batches of
  :func:`~mteb_stratified.structure.embed.length_batches` (the single-machine path's batches);
  each batch is one row, encoded by an actor pool that loads the model once per actor.  A
  batch's float bits depend on its rows and padded length only, so they match the
  single-machine ones on the same kind of CPU (with ``--document-embedding bf16``, one that
  also has or lacks bfloat16 instructions alike; ``--embed-device cuda`` runs the actors on GPUs:
  faster, but GPU kernels give other float bits, so that artifact is not byte-identical to a
  CPU build).

The graph and Leiden steps need every entity at once; they run in the driver, as they do
without Ray.

Ray Client (``ray://``) is refused: its connections cannot carry Ray Data's streaming actor
calls (ray-project/ray#43357); run the command on a node of the cluster, or submit it with
``ray job submit``.

Fault tolerance: the actors are restarted and their tasks retried by Ray (Ray Data's
defaults for actor pools: ``max_restarts=-1``, ``max_task_retries=-1``).  A retried chunk's
rows replace nothing: the driver keeps one row per document (one answer per key) and refuses a
run that lost one.  Workers check that they load the driver's extractor (name, version,
parameters: the spaCy and model versions of their node) and the driver's versions of this
package, the normaliser and the libraries of their step (spaCy; openai and the prompt version;
sentence-transformers, transformers, torch), since a node with other versions would give other
entities, bits or prompts; a worker that cannot load its model stops the run with an error
naming its node.

Ray is imported only when an engine is made (the ``[ray]`` extra).
"""

from __future__ import annotations

import json
import socket
import time
from types import SimpleNamespace
from typing import Iterator, Sequence

import numpy as np

from .._optional import require
from ..core.errors import InputError

__all__ = ["RayEngine", "WorkerSetupError", "connect", "worker_factory"]

#: Marks a worker's own setup error in the text Ray sends back to the driver.
WORKER_TAG = "[mteb-stratified worker]"


class WorkerSetupError(RuntimeError):
    """A worker could not load what it needs (raised in the worker; Ray forwards its text)."""


def _node() -> str:
    import ray
    node_id = ray.get_runtime_context().get_node_id() or "?"
    return f"{ray.util.get_node_ip_address()} (Ray node {node_id[:12]})"


def code_versions(*modules: str) -> dict:
    """The versions that decide a worker's output besides its parameters: this package's,
    the normaliser's, and those of ``modules`` (compared by every worker against the
    driver's: a node with other versions would give other entities, bits or prompts)."""
    import importlib

    from .. import __version__
    from ..structure.normalise import NORMALISER_VERSION
    out = {"mteb_stratified": __version__, "normaliser": NORMALISER_VERSION}
    for name in modules:
        try:
            out[name] = getattr(importlib.import_module(name), "__version__", "?")
        except ImportError:
            out[name] = None
    return out


def _check_versions(expected: dict, what: str) -> None:
    got = code_versions(*(k for k in expected if k not in ("mteb_stratified", "normaliser")))
    if got != expected:
        diff = {k: (got.get(k), v) for k, v in expected.items() if got.get(k) != v}
        raise WorkerSetupError(
            f"{WORKER_TAG} the worker on node {_node()} runs other versions than the driver for "
            f"the {what} (here, on the driver: {diff}): its output would differ")


def _identity(extractor) -> str:
    """What decides an extractor's output: name, version and parameters (JSON), compared
    between the driver and each worker."""
    return json.dumps([extractor.name, extractor.version, extractor.params()], sort_keys=True)


def worker_factory(extractor):
    """A picklable zero-argument callable that makes ``extractor``'s twin in a worker (its
    ``worker_factory()``); an InputError for an extractor that has none."""
    make = getattr(extractor, "worker_factory", None)
    if make is None:
        raise InputError(
            f"the extractor {type(extractor).__name__} cannot run on Ray workers: it has no "
            "worker_factory()",
            fix="give the extractor a worker_factory() method returning a picklable callable "
                "that builds it in a worker, or run without --engine ray")
    return make()


class _ExtractWorker:
    """An actor: the extractor, loaded once; each input row is one chunk of documents."""

    def __init__(self, factory, expected: str, versions: dict, min_chars: int,
                 max_words: int) -> None:
        _check_versions(versions, "extraction")
        try:
            self.extractor = factory()
            got = _identity(self.extractor)
        except BaseException as exc:  # the driver gets the text, with this node's address
            raise WorkerSetupError(f"{WORKER_TAG} the worker on node {_node()} could not load "
                                   f"the extractor: {type(exc).__name__}: {exc}") from None
        if got != expected:
            raise WorkerSetupError(
                f"{WORKER_TAG} the worker on node {_node()} loads another extractor than the "
                f"driver ({got} here, {expected} on the driver): its entities would differ")
        self.cfg = SimpleNamespace(min_chars=min_chars, max_words=max_words)

    def __call__(self, batch: dict) -> dict:
        from ..structure.extraction import extract_rows
        out = []
        for ids, texts in zip(batch["doc_ids"], batch["texts"]):
            ids = [str(d) for d in ids]
            rows = extract_rows(self.extractor, ids, dict(zip(ids, map(str, texts))), self.cfg)
            out.append(json.dumps(rows, ensure_ascii=False))
        return {"rows": np.array(out, dtype=object)}


class _AnswerWorker:
    """An actor for the LLM extractor: paid calls for documents the driver's cache lacks."""

    def __init__(self, factory, versions: dict, prompt_version: str) -> None:
        _check_versions(versions, "LLM extraction")
        try:
            self.extractor = factory()
        except BaseException as exc:
            raise WorkerSetupError(f"{WORKER_TAG} the worker on node {_node()} could not make "
                                   f"the LLM extractor: {type(exc).__name__}: {exc}") from None
        if self.extractor.prompt_version != prompt_version:  # its answers would be cached
            raise WorkerSetupError(  # under the driver's prompt version: refuse
                f"{WORKER_TAG} the worker on node {_node()} has prompt version "
                f"{self.extractor.prompt_version!r}, the driver {prompt_version!r}")

    def _answer(self, text: str, partial: str = "") -> str:
        """The record as JSON (re-asked from ``partial``, the driver's stored first answer, as
        JSON or ""), or an ``{"error": ...}`` row for an endpoint that refused or could not be
        reached (the driver raises it after storing the answers that came)."""
        from ..core.errors import EndpointError, InputError
        try:
            return json.dumps(self.extractor.answer(text, json.loads(partial) if partial
                                                    else None))
        except InputError as exc:
            return json.dumps({"error": "input", "message": exc.message, "fix": exc.fix,
                               "node": _node()})
        except EndpointError as exc:
            return json.dumps({"error": "endpoint", "message": exc.message,
                               "endpoint": exc.endpoint, "check": exc.check, "node": _node()})

    def __call__(self, batch: dict) -> dict:
        from concurrent.futures import ThreadPoolExecutor
        # each input row holds a group of keys and texts (one request per worker thread)
        keys = [str(k) for group in batch["key"] for k in group]
        texts = [str(t) for group in batch["text"] for t in group]
        partials = [str(p) for group in batch["partial"] for p in group]
        before = self.extractor.usage()
        with ThreadPoolExecutor(max_workers=self.extractor.concurrency) as pool:
            records = list(pool.map(self._answer, texts, partials))
        after = self.extractor.usage()
        delta = {k: after[k] - before.get(k, 0) for k in ("requests", "retries", "reasks")}
        return {"key": np.array(keys, dtype=object), "record": np.array(records, dtype=object),
                "usage": np.array([json.dumps(delta)] + [""] * (len(keys) - 1), dtype=object)}


class _EmbedWorker:
    """An actor: the sentence model, loaded once; each input row is one batch of texts."""

    def __init__(self, model: str | None, device: str, versions: dict,
                 precision: str = "float32") -> None:
        _check_versions(versions, "embedding")
        self.bf16 = precision == "bf16"
        try:
            from ..structure.embed import load_sentence_model
            self.model = load_sentence_model(model, device, int8=precision == "int8")
        except BaseException as exc:
            raise WorkerSetupError(
                f"{WORKER_TAG} the worker on node {_node()} could not load the embedding model "
                f"{model or 'all-MiniLM-L6-v2 (packaged)'} on {device}: "
                f"{type(exc).__name__}: {exc}") from None

    def __call__(self, batch: dict) -> dict:
        from ..structure.embed import encode_batch
        embs = [encode_batch(self.model, [str(t) for t in texts], bf16=self.bf16)
                for texts in batch["texts"]]
        return {"batch": batch["batch"],
                "emb": np.array([e.tobytes() for e in embs], dtype=object),
                "dim": np.array([e.shape[1] for e in embs])}


def _host_port(address: str) -> tuple[str, int] | None:
    rest = address.split("://", 1)[1] if "://" in address else address
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]"), int(port)


_CONNECT_FIX = ("start a cluster with `ray start --head` on the head node (and `ray start "
                "--address HEAD:6379` on the others), then run this command on a node of the "
                "cluster with --address auto (or --address HEAD:6379), or submit it with `ray "
                "job submit -- mteb-stratified structure ... --address auto`; omit --address "
                "for a local Ray on this machine")


def check_address(address: str | None) -> tuple[str, int] | None:
    """``(host, port)`` of a ``HOST:PORT`` address (None for ``auto`` and ``None``), or an
    InputError: a malformed address, or Ray Client (``ray://``), whose connections cannot carry
    Ray Data's streaming actor calls (Ray refuses them: ray-project/ray#43357)."""
    if address in (None, "auto"):
        return None
    if address.startswith("ray://"):
        raise InputError(
            f"--address {address}: Ray Client cannot run Ray Data pipelines (its connections "
            "do not carry the streaming actor calls Ray Data's actor pools make)",
            fix="run the command on a node of the cluster (the head node, or the head pod of a "
                "KubeRay cluster: kubectl exec) with --address auto, or submit it with `ray job "
                "submit --address http://HEAD:8265 -- mteb-stratified structure ... --address "
                "auto`")
    hp = _host_port(address)
    if hp is None:
        raise InputError(f"--address {address!r} is not auto or HOST:PORT", fix=_CONNECT_FIX)
    return hp


def connect(address: str | None, *, timeout: float = 5.0) -> None:
    """Join the Ray cluster at ``address`` (``auto``: the one this node belongs to;
    ``HOST:PORT``: its head's GCS address), or start a local one (``None``; Ray then reads
    ``RAY_ADDRESS`` if it is set).  A Ray already initialised in this process is used as it
    is."""
    import os
    ray = require("ray", "ray")
    require("ray.data", "ray")
    if ray.is_initialized():
        return
    hp = check_address(address)
    if hp is not None:
        try:
            socket.create_connection(hp, timeout=timeout).close()
        except OSError as exc:
            raise InputError(f"no Ray cluster answers at --address {address} "
                             f"({exc.strerror or exc})", fix=_CONNECT_FIX) from None
    where = address or (f"RAY_ADDRESS={os.environ['RAY_ADDRESS']}"
                        if os.environ.get("RAY_ADDRESS") else "a local Ray")
    try:
        ray.init(address=address, include_dashboard=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise InputError(f"could not join a Ray cluster at {where}: "
                         f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                         fix=_CONNECT_FIX) from None


def _worker_endpoint_error(row: dict) -> Exception:
    """The driver's copy of an endpoint error a worker met (an InputError or EndpointError,
    with the worker's node)."""
    from ..core.errors import EndpointError
    where = f" (from the Ray worker on node {row.get('node')})"
    if row["error"] == "input":
        return InputError(row["message"] + where, fix=row.get("fix"))
    return EndpointError(row["message"] + where, endpoint=row.get("endpoint"),
                         check=row.get("check"))


class RayEngine:
    """Extraction and embedding on a Ray cluster (module docstring).

    ``address``: see :func:`connect`; ``workers``: actors per step (default: the cluster's
    CPUs); ``embed_device``: ``cpu`` (byte-identical to the single-machine path) or ``cuda``
    (one GPU per embedding actor); ``progress``: Ray Data's progress bars.
    """

    name = "ray"

    def __init__(self, address: str | None = None, *, workers: int | None = None,
                 embed_device: str = "cpu", progress: bool = True) -> None:
        if workers is not None and workers < 1:
            raise InputError(f"workers must be >= 1, got {workers}", fix="e.g. --workers 2")
        if embed_device not in ("cpu", "cuda"):
            raise InputError(f"unknown embed_device {embed_device!r}", fix="choose cpu or cuda")
        connect(address)
        import ray
        resources = ray.cluster_resources()
        self.cpus = int(resources.get("CPU", 1))
        self.gpus = int(resources.get("GPU", 0))
        if embed_device == "cuda" and self.gpus < 1:
            raise InputError("--embed-device cuda: the Ray cluster has no GPU",
                             fix="add GPU nodes to the cluster, or use --embed-device cpu")
        if workers is not None and workers > self.cpus:
            raise InputError(f"--workers {workers}: the Ray cluster has {self.cpus} CPUs (one "
                             "per worker)", fix=f"pass --workers {self.cpus} or fewer, or add "
                                                "nodes to the cluster")
        self.workers = int(workers or max(self.cpus, 1))
        self.embed_device = embed_device
        self.progress = bool(progress)
        self.progress_bars = self.progress
        self.nodes = sum(1 for n in ray.nodes() if n.get("Alive"))
        self.stats: dict = {}

    # -- plumbing ------------------------------------------------------------------------------
    def _dataset(self, items: list):
        """A dataset of ``items``, one block each.  Sets the process's current Ray Data context
        (progress bars, unordered output), as a Ray Data script does."""
        import ray
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = self.progress
        ctx.execution_options.preserve_order = False
        return ray.data.from_items(items, override_num_blocks=max(1, len(items)))

    def _map(self, ds, cls, n_items: int, **kwargs):
        import ray
        gpu = kwargs.pop("gpu", False)
        size = max(1, min(self.workers, n_items, self.gpus if gpu else n_items))
        gpus = {"num_gpus": 1} if gpu else {}
        # Ray Data restarts dead actors and retries their tasks by default (max_restarts=-1,
        # max_task_retries=-1); a failed constructor is not retried forever
        return ds.map_batches(cls, batch_size=1, batch_format="numpy",
                              compute=ray.data.ActorPoolStrategy(size=size), num_cpus=1,
                              **gpus, **kwargs)

    def _rows(self, ds, step: str, extra: str = "structure") -> Iterator[dict]:
        """The output rows, with a worker's setup error turned into an InputError."""
        try:
            yield from ds.iter_rows()
        except InputError:
            raise
        except Exception as exc:  # Ray wraps the worker's exception in its own types
            text = str(exc)
            line = next((ln for ln in text.splitlines() if WORKER_TAG in ln), None)
            if line is None:
                raise
            message = line[line.index(WORKER_TAG) + len(WORKER_TAG):].strip()
            raise InputError(f"the Ray {step} step stopped: {message}",
                             fix=f"install the same mteb-stratified with its [{extra}] extra "
                                 "(the same library and model versions) on every node of the "
                                 "cluster, or give a model path that exists on every "
                                 "node") from None

    def _count(self, step: str, items: int, seconds: float, **extra) -> None:
        s = self.stats.setdefault(step, {"items": 0, "seconds": 0.0})
        s["items"] += items
        s["seconds"] += seconds
        s.update(extra)

    # -- the two steps -------------------------------------------------------------------------
    def extract(self, chunks: Sequence[list], texts: dict, extractor, cfg) -> Iterator[list]:
        if not chunks:
            return
        t0 = time.perf_counter()
        if hasattr(extractor, "pending"):  # an extractor with an answer cache: the LLM one
            yield from self._extract_cached(chunks, texts, extractor, cfg)
        else:
            expected = _identity(extractor)
            items = [{"doc_ids": list(c), "texts": [texts[d] for d in c]} for c in chunks]
            ds = self._map(self._dataset(items), _ExtractWorker, len(items),
                           fn_constructor_kwargs={"factory": worker_factory(extractor),
                                                  "expected": expected,
                                                  "versions": code_versions("spacy"),
                                                  "min_chars": cfg.min_chars,
                                                  "max_words": cfg.max_words})
            for row in self._rows(ds, "extraction"):
                yield json.loads(row["rows"])
        self._count("extract", sum(map(len, chunks)), time.perf_counter() - t0,
                    workers=min(self.workers, len(chunks)))

    def _extract_cached(self, chunks, texts, extractor, cfg) -> Iterator[list]:
        """LLM extraction: only the answers missing from the driver's cache are asked by the
        workers; the driver stores each one as it arrives and builds the rows from its cache."""
        from ..structure.extraction import extract_rows
        waiting: dict = {}   # chunk index -> keys still missing
        owner: dict = {}     # key -> chunk indexes
        partials: dict = {}  # key -> its partial record (a stored first answer) or None
        items = []
        for i, chunk in enumerate(chunks):
            missing = extractor.pending([texts[d] for d in chunk])
            if not missing:
                yield extract_rows(extractor, chunk, texts, cfg)
                continue
            waiting[i] = set()
            for key, text in missing:
                waiting[i].add(key)
                if key not in owner:  # a first answer being re-asked is re-asked from
                    partials[key] = extractor.resume_point(key)
                    items.append({"key": key, "text": text,
                                  "partial": json.dumps(partials[key]) if partials[key] else ""})
                owner.setdefault(key, []).append(i)
        if not items:
            return
        batch = max(1, extractor.concurrency)
        grouped = [{name: [it[name] for it in items[s:s + batch]]
                    for name in ("key", "text", "partial")}
                   for s in range(0, len(items), batch)]
        ds = self._map(self._dataset(grouped), _AnswerWorker, len(grouped),
                       fn_constructor_kwargs={"factory": worker_factory(extractor),
                                              "versions": code_versions("openai"),
                                              "prompt_version": extractor.prompt_version})
        stored: set = set()
        error = None
        for row in self._rows(ds, "LLM extraction", "llm"):
            if row["usage"]:
                extractor.endpoint.count(**json.loads(row["usage"]))
            key, record = row["key"], json.loads(row["record"])
            if "error" in record:  # the endpoint refused or was unreachable: raised below
                error = error or record
                continue
            if key in stored:  # a retried task's repeat: stored and counted once
                continue
            stored.add(key)
            extractor.store(key, record, partials.get(key))
            for i in owner.get(key, []):
                if i in waiting:
                    waiting[i].discard(key)
                    if not waiting[i]:
                        del waiting[i]
                        yield extract_rows(extractor, chunks[i], texts, cfg)
        if error is not None:  # after every answer that came was stored: a rerun resumes
            raise _worker_endpoint_error(error)

    def embed(self, inputs: Sequence[str], model: str | None, batch_size: int, *,
              precision: str = "float32") -> np.ndarray:
        from ..structure.embed import check_precision, length_batches
        check_precision(precision)
        if precision == "int8" and self.embed_device != "cpu":
            raise InputError("the int8 embedding runs on CPUs only, not with --embed-device "
                             f"{self.embed_device}",
                             fix="drop --embed-device cuda, or embed with the model itself "
                                 "(--document-embedding model, or bf16)")
        if len(inputs) == 0:
            from ..structure.embed import embed_texts
            return embed_texts([], model)
        t0 = time.perf_counter()
        batches = length_batches(inputs, batch_size)
        items = [{"batch": b, "texts": [inputs[i] for i in idx]} for b, idx in enumerate(batches)]
        ds = self._map(self._dataset(items), _EmbedWorker, len(items),
                       gpu=self.embed_device == "cuda",
                       fn_constructor_kwargs={"model": model, "device": self.embed_device,
                                              "precision": precision,
                                              "versions": code_versions(
                                                  "sentence_transformers", "transformers",
                                                  "torch")})
        out = None
        seen = set()
        for row in self._rows(ds, "embedding"):
            b = int(row["batch"])
            emb = np.frombuffer(row["emb"], dtype=np.float32).reshape(-1, int(row["dim"]))
            if out is None:
                out = np.zeros((len(inputs), emb.shape[1]), dtype=np.float32)
            out[batches[b]] = emb
            seen.add(b)
        if len(seen) != len(batches):
            raise RuntimeError(f"the Ray embedding step returned {len(seen)} of "
                               f"{len(batches)} batches")
        self._count("embed", len(inputs), time.perf_counter() - t0,
                    workers=min(self.workers, len(items)))
        return out

    def summary(self) -> dict:
        steps = {step: {"items": s["items"], "seconds": round(s["seconds"], 2),
                        "per_second": round(s["items"] / s["seconds"], 1) if s["seconds"] else None,
                        "workers": s.get("workers")}
                 for step, s in self.stats.items()}
        return {"engine": self.name, "nodes": self.nodes, "cpus": self.cpus, "gpus": self.gpus,
                "workers": self.workers, "embed_device": self.embed_device, "steps": steps}
