"""Entity embeddings with a sentence-transformers model (the packaged MiniLM by default)."""

from __future__ import annotations

import contextlib
import os
from typing import Sequence

import numpy as np

from .sentence_model import (DEFAULT_MODEL, default_model_name,  # noqa: F401  (re-exported)
                             load_sentence_model)

__all__ = ["default_model_name", "load_sentence_model", "embed_texts", "length_batches",
           "encode_batch", "cached_array", "EMBEDDING_METHODS", "embed_with",
           "entity_embedding_of", "INT8_BATCH", "DOCUMENT_BATCH", "PRECISIONS",
           "check_precision", "model_identity", "corpus_key", "embed_corpus",
           "DOCUMENT_EMBEDDING_CHOICES", "resolve_document_embedding", "embedding_versions"]

#: How a structure embeds: ``static``, the model's distilled static embedding (a lookup:
#: :mod:`.static_embed`), ``model``, the sentence-transformers model itself (float32),
#: ``bf16``, the model with its matrix products in bfloat16 (:func:`encode_batch`), or
#: ``int8``, the model with its linear layers quantised to int8
#: (:func:`.sentence_model.quantize_int8`).
EMBEDDING_METHODS = ("static", "model", "bf16", "int8")

#: What ``--document-embedding`` takes: the methods, and ``auto``
#: (:func:`resolve_document_embedding`).
DOCUMENT_EMBEDDING_CHOICES = EMBEDDING_METHODS + ("auto",)

#: The arithmetic each method that runs the model runs it in (``precision`` below).
PRECISIONS = {"model": "float32", "bf16": "bf16", "int8": "int8"}

#: Texts per forward pass when the document map embeds its documents (float32 and bf16).
DOCUMENT_BATCH = 64

#: Texts per forward pass of the int8 model: small batches pad less, and its int8 products
#: gain more from that than float32 ones (16: 2.5x float32 at 64, 64: 2.2x, on NFCorpus).
INT8_BATCH = 16


def length_batches(texts: Sequence[str], batch_size: int) -> list[np.ndarray]:
    """The batches :func:`embed_texts` encodes: positions of ``texts`` sorted by length, longest
    first (sentence-transformers' own order, so each batch pads to similar lengths), cut every
    ``batch_size``.

    Every engine encodes these same batches (:func:`encode_batch`), so the float bits of an
    embedding do not depend on where it was computed: a batch's padded length and rows decide
    them, and on one kind of CPU neither the thread count nor the process changes them.
    """
    order = np.argsort([-len(t) for t in texts])  # sentence-transformers' call, ties included
    return [order[s:s + batch_size] for s in range(0, len(order), batch_size)]


def encode_batch(st_model, texts: Sequence[str], *, bf16: bool = False) -> np.ndarray:
    """L2-normalised float32 embeddings of one batch (:func:`length_batches`), in one forward
    pass.

    ``bf16``: the pass runs under ``torch.autocast(dtype=torch.bfloat16)`` on the model's
    device.  The linear layers and the attention (scaled-dot-product, softmax inside it) take
    bfloat16 inputs (8-bit mantissa; the products accumulate in float32), and GELU runs on
    their bfloat16 outputs; each residual add promotes back to float32 (the residual stream is
    float32), so layer norm, the token embeddings and the mean pooling run in float32.  On a
    CPU with bfloat16 instructions (:func:`.sentence_model.cpu_bf16_native`) oneDNN runs the
    products natively (speed and the map it gives: docs/validity/structure.md, "Structure in
    minutes"); elsewhere they are converted, which is expected to be slower than float32
    (not measured here: this machine has the instructions).
    """
    context = contextlib.nullcontext()
    if bf16:
        import torch
        context = torch.autocast(device_type=st_model.device.type, dtype=torch.bfloat16)
    with context:
        emb = st_model.encode(list(texts), batch_size=max(len(texts), 1), convert_to_numpy=True,
                              normalize_embeddings=True, show_progress_bar=False)
    return np.ascontiguousarray(emb, dtype=np.float32)


def check_precision(precision: str) -> None:
    """A ValueError naming the choices unless ``precision`` is a value of :data:`PRECISIONS`."""
    if precision not in PRECISIONS.values():
        raise ValueError(f"precision must be one of {sorted(PRECISIONS.values())}, "
                         f"not {precision!r}")


def embed_texts(texts: Sequence[str], model: str | None = None, *, batch_size: int = 256,
                show_progress: bool = False, desc: str = "embed",
                precision: str = "float32") -> np.ndarray:
    """L2-normalised float32 embeddings, one row per text (order kept); ``show_progress``: a
    bar on stderr named ``desc``; ``precision``: ``float32`` (the model as it ships), ``bf16``
    (:func:`encode_batch`) or ``int8`` (:func:`.sentence_model.quantize_int8`)."""
    check_precision(precision)
    st_model = load_sentence_model(model, int8=precision == "int8")
    if len(texts) == 0:
        get_dim = getattr(st_model, "get_embedding_dimension", None) or \
            st_model.get_sentence_embedding_dimension
        dim = get_dim()
        return np.zeros((0, dim), dtype=np.float32)
    batches = length_batches(texts, batch_size)
    bar = None
    if show_progress:
        from .extraction import progress_bar
        bar = progress_bar(len(texts), desc, True, unit="text")
    out = None
    for idx in batches:
        emb = encode_batch(st_model, [texts[i] for i in idx], bf16=precision == "bf16")
        if out is None:
            out = np.zeros((len(texts), emb.shape[1]), dtype=np.float32)
        out[idx] = emb
        if bar is not None:
            bar.update(len(idx))
    if bar is not None:
        bar.close()
    return out


def embed_with(texts: Sequence[str], model: str | None, method: str, *, batch_size: int = 256,
               show_progress: bool = False, desc: str = "embed") -> np.ndarray:
    """Unit float32 rows of ``texts`` by ``method`` (:data:`EMBEDDING_METHODS`) from ``model``
    (None: the packaged all-MiniLM-L6-v2)."""
    if method not in EMBEDDING_METHODS:
        raise ValueError(f"method must be one of {', '.join(EMBEDDING_METHODS)}, not {method!r}")
    if method == "static":
        from .static_embed import distill
        return distill(model, show_progress=show_progress).encode(texts)
    return embed_texts(texts, model, batch_size=INT8_BATCH if method == "int8" else batch_size,
                       show_progress=show_progress, desc=desc, precision=PRECISIONS[method])


def entity_embedding_of(artifact) -> str:
    """How ``artifact``'s entity names were embedded (``parameters.entity_embedding``; an
    artifact that does not say was built with the model itself)."""
    params = artifact.metadata.get("parameters") or {}
    method = params.get("entity_embedding", "model")
    return method if method in EMBEDDING_METHODS else "model"


def cached_array(path: str | None, compute) -> np.ndarray:
    """``compute()``, cached as a ``.npy`` file at ``path`` (None: no cache).

    The file is written through a temp file unique to the process (two jobs on one folder never
    share one); an unreadable cached file (torn, foreign) is computed again and replaced.
    """
    if path is not None and os.path.exists(path):
        try:
            return np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            pass
    value = compute()
    if path is not None:
        from ..io.outputs import atomic_write
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with atomic_write(path, "wb") as fh:
            np.save(fh, value, allow_pickle=False)
    return value


def model_identity(model: str | None) -> dict | None:
    """What decides a model's weights, for the embedding cache's key
    (:mod:`mteb_stratified.io.embedding_cache`): ``{"name", "path", "files_sha256"}``, the hash
    over its folder's weight, config and tokenizer files
    (:func:`.static_embed.model_files_hash`, computed once per folder and process).  A hub
    name is hashed in its local Hugging Face snapshot; None when no folder is found (such a
    model is not cached: its weights are not known before it loads)."""
    from .sentence_model import DEFAULT_MODEL, resolve_model
    from .static_embed import model_files_hash

    path = resolve_model(model)
    if not os.path.isdir(path):
        try:
            from huggingface_hub import try_to_load_from_cache
            found = try_to_load_from_cache(path, "config.json")
        except Exception:  # noqa: BLE001 - not a name the hub takes: nothing to hash
            return None
        if not isinstance(found, str):
            return None
        path = os.path.dirname(found)
    return {"name": model or DEFAULT_MODEL, "path": os.path.abspath(path),
            "files_sha256": model_files_hash(path)}


def embedding_versions() -> dict:
    """The torch and sentence-transformers versions (part of an embedding cache key's recipe:
    either can change the bits), read from the installed metadata, without importing them."""
    from importlib import metadata

    out = {}
    for pkg in ("torch", "sentence-transformers"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def corpus_key(texts: Sequence[str], model: str | None, precision: str, *,
               device: str = "cpu"):
    """The embedding cache's key (:class:`~mteb_stratified.io.embedding_cache.EmbeddingKey`)
    of :func:`embed_corpus`'s rows of ``texts``, None when the model's files are not found.

    The recipe is what decides the bits besides the model, the precision and the texts: the
    batches of :func:`length_batches` (:data:`DOCUMENT_BATCH` texts, :data:`INT8_BATCH` for
    int8), unit rows in float32, the device, and the torch and sentence-transformers
    versions."""
    from ..io.embedding_cache import EmbeddingKey, texts_hash

    check_precision(precision)
    identity = model_identity(model)
    if identity is None:
        return None
    digest, n = texts_hash(texts)
    recipe = {"rows": "sentence-transformers encode, L2-normalised, float32",
              "batches": "length_batches, longest first",
              "batch_size": INT8_BATCH if precision == "int8" else DOCUMENT_BATCH,
              "device": device, **embedding_versions()}
    return EmbeddingKey(identity, precision, digest, n, recipe)


def embed_corpus(texts: Sequence[str], model: str | None, precision: str = "float32", *,
                 compute=None, device: str = "cpu", fallback: str | None = None,
                 show_progress: bool = False, desc: str = "embed the corpus") -> tuple:
    """``(embeddings, path)``: unit float32 rows of ``texts`` (order kept) by ``model`` in
    ``precision``, from the user's embedding cache when any command embedded the same texts
    with the same model, precision and recipe before (:func:`corpus_key`), else computed and
    stored there.  ``path``: the entry's ``.npy`` file, which holds these very bits.

    ``compute``: a function that gives the rows (an engine's ``embed``); by default
    :func:`embed_texts` in batches of :data:`DOCUMENT_BATCH` (:data:`INT8_BATCH` for int8).
    ``device``: where ``compute`` runs (part of the key).  With the cache off
    (:func:`~mteb_stratified.io.embedding_cache.cache_folder`) or a model whose files are not
    found, the rows are cached at ``fallback`` (a file path; None: not cached)."""
    from ..io.embedding_cache import default_cache

    if compute is None:
        batch = INT8_BATCH if precision == "int8" else DOCUMENT_BATCH
        def compute():
            return embed_texts(texts, model, batch_size=batch, show_progress=show_progress,
                               desc=desc, precision=precision)
    cache = default_cache()
    key = corpus_key(texts, model, precision, device=device) if cache is not None else None
    if key is None:
        return cached_array(fallback, compute), fallback
    return cache.get_or_compute(key, compute)


def resolve_document_embedding(method: str, *, device: str = "cpu",
                               cpuinfo: str = "/proc/cpuinfo") -> tuple[str, str]:
    """``(method, why)``: ``auto`` resolved for where the documents are embedded: ``bf16``
    when ``device`` is a GPU, or the CPU has bfloat16 dot-product instructions (AVX-512 BF16,
    AMX-BF16, Arm BF16: :func:`.sentence_model.cpu_bf16_native` reads ``cpuinfo``), else
    ``model`` (float32: converted bfloat16 products are slower than float32 there); any other
    method is returned as it is."""
    if method != "auto":
        return method, "chosen"
    if device != "cpu":
        return "bf16", f"auto: the documents are embedded on {device}"
    from .sentence_model import cpu_bf16_native

    native = cpu_bf16_native(cpuinfo)
    if native:
        return "bf16", "auto: this CPU has bfloat16 instructions (AVX-512 BF16, AMX or Arm BF16)"
    return "model", ("auto: this CPU has no bfloat16 instructions, float32 is faster"
                     if native is False else
                     "auto: this CPU's instructions cannot be read, float32 is the safe choice")
