"""The on-disk cache of text embeddings: a corpus embedded once is reused by every later command.

An entry is one array (``N × dim``, one row per text, in the order given) and its key:

* **model**: what decides the weights: the model's name, its folder, and a SHA-256 of its
  weight, config and tokenizer files (so a fine-tuned model saved over the same folder is
  another model); only the files' hash is compared, the name and folder are said in messages;
* **precision**: the arithmetic the model ran in (``float32``, ``bf16``, ``int8``, ...);
* **texts**: SHA-256 over the texts' own SHA-256 digests, in order, and their count;
* **recipe**: everything else that decides the bits (batch size and order, normalisation,
  device, the torch and sentence-transformers versions), given by the caller that computes it.

The file name is ``<texts>-<key>.npy`` (16 hex digits of each hash) with a JSON sidecar
``<texts>-<key>.json`` that records every key field, the array's shape and dtype and the
SHA-256 of the ``.npy`` file's bytes.  Both are written through a temp file and
``os.replace`` (the array first, the sidecar last, as its completion record), so a crash never
leaves a half entry that a later run reads.  A read trusts nothing: an entry whose sidecar is
missing or unreadable, whose fields differ from the key asked for (another model, precision,
text or recipe), or whose bytes do not match the recorded hash is not returned; the reason is
warned (:class:`~mteb_stratified.core.errors.InputWarning`) and the entry is computed again.
A plain miss for texts that are cached under another model, precision or recipe is said at
``INFO`` on the ``mteb_stratified.embedding_cache`` logger.

Where it lives (read at each call, never at import): the folder a command was given
(``--embedding-cache DIR``, through :func:`using`), else ``$MTEB_STRATIFIED_EMBEDDING_CACHE``,
else ``embeddings/`` in the project's user cache folder (``$MTEB_STRATIFIED_CACHE``, else
``$XDG_CACHE_HOME/mteb_stratified``, else ``~/.cache/mteb_stratified``: the convention of the
distilled static embeddings).  ``off`` (or ``none``) as either turns the cache off.  Clearing it
is deleting the folder; nothing else points into it.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import json
import logging
import os
import warnings
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator

import numpy as np

from ..core.errors import InputError

__all__ = ["ENV", "EmbeddingKey", "EmbeddingCache", "Lookup", "texts_hash", "cache_folder",
           "user_cache_root", "using", "default_cache"]

#: The environment variable that moves the cache (a folder) or turns it off (``off``).
ENV = "MTEB_STRATIFIED_EMBEDDING_CACHE"
_OFF = frozenset({"off", "none", "no", "0", "false"})
_FORMAT = 1  # bumped when an entry's layout changes: older entries are then not read
_LOG = logging.getLogger("mteb_stratified.embedding_cache")
_CHOSEN: contextvars.ContextVar = contextvars.ContextVar("embedding_cache_folder", default=None)


def user_cache_root() -> str:
    """The project's user cache folder (module docstring); nothing is created here."""
    root = os.environ.get("MTEB_STRATIFIED_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(xdg, "mteb_stratified")
    return root


def _is_off(value: str) -> bool:
    return value.strip().lower() in _OFF


def cache_folder() -> str | None:
    """The folder of the embedding cache now (module docstring), None when it is off."""
    chosen = _CHOSEN.get()
    if chosen is None:
        chosen = os.environ.get(ENV) or None
    if chosen is None:
        return os.path.join(user_cache_root(), "embeddings")
    return None if _is_off(chosen) else os.path.abspath(os.path.expanduser(chosen))


@contextlib.contextmanager
def using(folder: str | None) -> Iterator[None]:
    """Within the block, the cache is ``folder`` (``"off"``: no cache; None: as before)."""
    if folder is None:
        yield
        return
    if not str(folder).strip():
        raise InputError("the embedding cache folder is an empty string",
                         fix="name a folder, or 'off' for no cache")
    token = _CHOSEN.set(str(folder))
    try:
        yield
    finally:
        _CHOSEN.reset(token)


def texts_hash(texts: Iterable[str]) -> tuple[str, int]:
    """``(hex, n)``: SHA-256 over the SHA-256 digest of each text (UTF-8), in order, and the
    number of texts.  Fed text by text: the corpus is never joined in memory."""
    h, n = hashlib.sha256(), 0
    for t in texts:
        h.update(hashlib.sha256(t.encode("utf-8", "surrogatepass")).digest())
        n += 1
    h.update(f"|{n}".encode())
    return h.hexdigest(), n


@dataclass(frozen=True)
class EmbeddingKey:
    """What an entry holds (module docstring).  ``model``: ``{"name", "path", "files_sha256"}``
    (only ``files_sha256`` is compared); ``recipe``: JSON-able settings that decide the bits."""

    model: dict
    precision: str
    texts: str
    n_texts: int
    recipe: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"format": _FORMAT, "model": dict(self.model), "precision": self.precision,
                "texts_sha256": self.texts, "n_texts": int(self.n_texts),
                "recipe": dict(self.recipe)}

    def digest(self) -> str:
        """SHA-256 of the compared fields (the model's files hash, not its name or folder)."""
        fields = {"format": _FORMAT, "model": self.model.get("files_sha256"),
                  "precision": self.precision, "texts": self.texts, "n": int(self.n_texts),
                  "recipe": self.recipe}
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()

    def stem(self) -> str:
        return f"{self.texts[:16]}-{self.digest()[:16]}"

    def differences(self, recorded: dict) -> list[str]:
        """Why an entry recorded as ``recorded`` (a sidecar) is not this key: one phrase per
        field that differs (another model, precision, text or recipe), [] when none does."""
        out = []
        if recorded.get("format") != _FORMAT:
            out.append(f"another entry format ({recorded.get('format')!r}, not {_FORMAT})")
        theirs = recorded.get("model")
        theirs = theirs if isinstance(theirs, dict) else {}   # a record trusts nothing
        recipe = recorded.get("recipe")
        recipe = recipe if isinstance(recipe, dict) else {}
        if theirs.get("files_sha256") != self.model.get("files_sha256"):
            out.append(f"another model ({_model_words(theirs)}, not {_model_words(self.model)})")
        if recorded.get("precision") != self.precision:
            out.append(f"another precision ({recorded.get('precision')}, not {self.precision})")
        if (recorded.get("texts_sha256"), recorded.get("n_texts")) != (self.texts, self.n_texts):
            out.append(f"other texts ({recorded.get('n_texts')} texts with hash "
                       f"{str(recorded.get('texts_sha256'))[:16]}, not {self.n_texts} with "
                       f"{self.texts[:16]})")
        if recorded.get("recipe") != self.recipe:
            keys = sorted(str(k) for k in set(self.recipe) | set(recipe)
                          if recipe.get(k) != self.recipe.get(k))
            out.append(f"another recipe ({', '.join(keys) or 'its fields'} differ)")
        return out


def _model_words(model: dict) -> str:
    return (f"{model.get('name') or model.get('path')}, files "
            f"{str(model.get('files_sha256'))[:12]}")


@dataclass(frozen=True)
class Lookup:
    """What :meth:`EmbeddingCache.get` found: the ``array`` (None: not usable), the entry's
    ``path`` and, when nothing was returned, ``reasons`` it was not."""

    array: np.ndarray | None
    path: str
    reasons: tuple = ()


class EmbeddingCache:
    """The entries in ``folder`` (created on the first write)."""

    def __init__(self, folder: str) -> None:
        self.folder = os.fspath(folder)

    def path(self, key: EmbeddingKey) -> str:
        """The entry's ``.npy`` file (its sidecar: the same name ending in ``.json``)."""
        return os.path.join(self.folder, key.stem() + ".npy")

    def get(self, key: EmbeddingKey) -> Lookup:
        """The cached array of ``key`` when its entry is whole and is ``key``'s (module
        docstring); else a :class:`Lookup` with no array and the reasons, which are warned
        (an entry that is there but not usable) or logged (a plain miss)."""
        path = self.path(key)
        meta = path[:-4] + ".json"
        if not os.path.exists(path) and not os.path.exists(meta):
            reasons = tuple(self._siblings(key))
            for why in reasons:
                _LOG.info("embedding cache: %s: not reused: %s", self.folder, why)
            return Lookup(None, path, reasons)
        reasons = tuple(self._check(key, path, meta))
        if not reasons:
            return Lookup(np.load(path, allow_pickle=False), path)
        from ..core.errors import InputWarning
        warnings.warn(InputWarning(
            "the cached embeddings there are not reused, they are computed again: "
            + "; ".join(reasons), source=path), stacklevel=2)
        return Lookup(None, path, reasons)

    def _check(self, key: EmbeddingKey, path: str, meta: str) -> list[str]:
        """[] when the entry at ``path`` is whole and is ``key``'s, else why not."""
        try:
            with open(meta, encoding="utf-8") as fh:
                recorded = json.load(fh)
            if not isinstance(recorded, dict):
                raise ValueError("not a JSON object")
        except FileNotFoundError:
            return ["its record (.json) is missing: the entry was not finished"]
        except (OSError, ValueError) as exc:
            return [f"its record (.json) cannot be read ({type(exc).__name__})"]
        diff = key.differences(recorded)
        if diff:
            return [f"it holds {d}" for d in diff]
        try:
            digest = _file_sha256(path)
        except OSError as exc:
            return [f"its array (.npy) cannot be read ({type(exc).__name__}: {exc})"]
        if digest != recorded.get("npy_sha256"):
            return ["its array (.npy) does not match its record (truncated or changed)"]
        return []

    def _siblings(self, key: EmbeddingKey) -> Iterator[str]:
        """Why the entries cached for the same texts are not this key's (a plain miss)."""
        if not os.path.isdir(self.folder):
            return
        prefix = key.texts[:16] + "-"
        for name in sorted(os.listdir(self.folder)):
            if name.startswith(prefix) and name.endswith(".json"):
                try:
                    with open(os.path.join(self.folder, name), encoding="utf-8") as fh:
                        recorded = json.load(fh)
                except (OSError, ValueError):
                    continue
                if isinstance(recorded, dict):
                    diff = key.differences(recorded)
                    if diff:
                        yield f"{name[:-5]} holds these texts with " + "; ".join(
                            d.replace("another ", "", 1) for d in diff)

    def put(self, key: EmbeddingKey, array: np.ndarray) -> str:
        """Store ``array`` as ``key``'s entry (the array, then its record: module docstring);
        returns the ``.npy`` path."""
        from .outputs import atomic_write

        array = np.ascontiguousarray(array)
        if array.ndim != 2 or array.shape[0] != key.n_texts:
            raise ValueError(f"an entry holds one row per text: {array.shape} for "
                             f"{key.n_texts} texts")
        os.makedirs(self.folder, exist_ok=True)
        path = self.path(key)
        h = hashlib.sha256()
        with atomic_write(path, "wb") as fh:
            np.save(_Hashing(fh, h), array, allow_pickle=False)
        record = {**key.to_dict(), "shape": list(array.shape), "dtype": str(array.dtype),
                  "npy_sha256": h.hexdigest()}
        with atomic_write(path[:-4] + ".json", "w", encoding="utf-8") as fh:
            json.dump(record, fh, sort_keys=True, indent=1)
        return path

    def get_or_compute(self, key: EmbeddingKey,
                       compute: Callable[[], np.ndarray]) -> tuple[np.ndarray, str]:
        """``(array, path)``: the cached entry of ``key``, else ``compute()`` stored as it."""
        found = self.get(key)
        if found.array is not None:
            return found.array, found.path
        value = compute()
        try:
            return value, self.put(key, value)
        except OSError as exc:  # a full or read-only cache must not cost the work just done
            from ..core.errors import InputWarning
            warnings.warn(InputWarning(
                f"the embeddings could not be stored in the cache ({type(exc).__name__}: "
                f"{exc}); they are used without caching", source=self.folder,
                fix="free space there, or give --embedding-cache (or "
                    f"${ENV}) a writable folder, or 'off'"), stacklevel=2)
            return value, None


class _Hashing:
    """A write-only file that feeds what is written to a hash too (one pass over the bytes)."""

    def __init__(self, fh, h) -> None:
        self.fh, self.h = fh, h

    def write(self, data) -> int:
        self.h.update(data)
        return self.fh.write(data)


def _file_sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def default_cache() -> EmbeddingCache | None:
    """The cache at :func:`cache_folder` now, None when it is off."""
    folder = cache_folder()
    return None if folder is None else EmbeddingCache(folder)
