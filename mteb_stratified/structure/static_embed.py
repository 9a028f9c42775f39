"""Static embeddings distilled from a sentence-transformers model: an embedding is a lookup.

The method is model2vec's distillation (Tulkens & van Dongen, *Model2Vec*, 2024,
https://github.com/MinishLab/model2vec, its defaults), written here with torch and the model's
own fast tokenizer so that no further package is needed:

1. **token vectors**: every token ``t`` of the model's vocabulary is encoded alone, as
   ``[CLS] t [SEP]``, and its vector is the mean of the three output states
   (u_t = mean of h_CLS, h_t, h_SEP);
2. **PCA**: the token vectors are centred on their mean and projected on the top ``pca_dims``
   principal axes (eigenvectors of their covariance, largest eigenvalue first, each axis' sign
   fixed so that its largest-magnitude coordinate is positive);
3. **SIF weights**: row ``i`` (the vocabulary sorted by frequency, as BERT's WordPiece list is
   for whole words) is scaled by a / (a + p_i), with p_i = (1 / (i + 2)) / sum_j 1 / (j + 2)
   (Zipf's law) and ``a = sif_coefficient``: frequent tokens weigh less;
4. **encode**: a text's vector is the mean of its tokens' rows (the tokenizer's word pieces,
   no special tokens), scaled to unit length; a text with no token is the zero vector.

An embedding is then a tokenisation and a row sum, independent of the batch it is in and of
the thread count, so it can be cached by text and computed anywhere with the same bits.

The distilled table depends only on the model's weights and these parameters.  It is cached
in the user's cache folder (``$MTEB_STRATIFIED_CACHE``, else ``$XDG_CACHE_HOME/mteb_stratified``,
else ``~/.cache/mteb_stratified``), keyed by a hash of the model's files and the parameters, so
a machine distils each model once (about 20-40 s for MiniLM's 30,522 tokens on two cores).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["StaticEmbedding", "distill", "cache_folder", "model_files_hash", "STATIC_METHOD"]

#: Recorded in the artifact: what an entity embedding is when the static path made it.
STATIC_METHOD = "model2vec-distill"
_TOKEN_BATCH = 1024  # token rows per forward pass of the distillation (fixed: same bits)
_LOADED: dict = {}
_HASHES: dict = {}


def cache_folder() -> str:
    """Where distilled tables are kept (module docstring); nothing is created here."""
    root = os.environ.get("MTEB_STRATIFIED_CACHE")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(xdg, "mteb_stratified")
    return os.path.join(root, "static-embeddings")


#: The files of a model folder that decide its embeddings (:func:`model_files_hash`).
HASHED_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".onnx", ".json", ".txt", ".model",
                   ".py")


def model_files_hash(folder: str) -> str:
    """sha256 over the model folder's weight, config and tokenizer files (name and bytes),
    computed once per folder and process (every embedding call of a build asks for it).

    Hashed: :data:`HASHED_SUFFIXES` (weights in safetensors, PyTorch, ONNX; JSON configs;
    WordPiece/BPE vocabularies; SentencePiece models; a model's own Python code, which
    ``trust_remote_code`` runs); not a README or ``.gitattributes``."""
    if folder not in _HASHES:
        _HASHES[folder] = _hash_files(folder)
    return _HASHES[folder]


def _hash_files(folder: str) -> str:
    h = hashlib.sha256()
    for root, dirs, files in os.walk(folder):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(HASHED_SUFFIXES):
                path = os.path.join(root, name)
                h.update(os.path.relpath(path, folder).encode() + b"\0")
                with open(path, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 22), b""):
                        h.update(block)
    return h.hexdigest()


@dataclass(frozen=True)
class StaticEmbedding:
    """A distilled static model: ``vectors`` (one row per token id) and the ``tokenizer``
    (a :class:`tokenizers.Tokenizer`); ``key`` names the source model and parameters."""

    vectors: np.ndarray
    tokenizer: object
    key: str
    source: dict

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    def encode(self, texts: Sequence[str], *, block: int = 4096) -> np.ndarray:
        """Unit float32 vectors, one row per text: the mean of its token rows, normalised
        (module docstring, step 4).  ``block`` texts are tokenised and summed at a time (the
        result does not depend on it: each row is its own sum, in token order)."""
        from scipy import sparse

        texts = list(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        table = self._table64()
        for start in range(0, len(texts), block):
            encodings = self.tokenizer.encode_batch(texts[start:start + block],
                                                    add_special_tokens=False)
            indptr = np.zeros(len(encodings) + 1, dtype=np.int64)
            np.cumsum([len(e.ids) for e in encodings], out=indptr[1:])
            ids = np.fromiter((i for e in encodings for i in e.ids), dtype=np.int64,
                              count=int(indptr[-1]))
            counts = sparse.csr_matrix((np.ones(ids.size), ids, indptr),
                                       shape=(len(encodings), table.shape[0]))
            sums = np.asarray(counts @ table)  # row i: its tokens' rows summed, in order
            norms = np.linalg.norm(sums, axis=1, keepdims=True)
            out[start:start + len(encodings)] = sums / np.where(norms > 0, norms, 1.0)
        return out

    def _table64(self) -> np.ndarray:
        table = self.__dict__.get("_vectors64")
        if table is None:  # frozen: cached through __dict__, not an attribute set
            table = self.vectors.astype(np.float64)
            object.__setattr__(self, "_vectors64", table)
        return table


def _token_vectors(st_model, bar=None) -> np.ndarray:
    """Step 1: the mean output of ``[CLS] t [SEP]`` for every token id (float64); ``bar``: a
    progress bar updated per token."""
    import torch

    bert = st_model[0].auto_model
    tok = st_model.tokenizer
    n = int(bert.config.vocab_size)
    cls_id, sep_id = int(tok.cls_token_id), int(tok.sep_token_id)
    out = np.zeros((n, int(bert.config.hidden_size)), dtype=np.float64)
    was_training = bert.training
    bert.eval()
    try:
        with torch.inference_mode():
            for s in range(0, n, _TOKEN_BATCH):
                ids = torch.arange(s, min(n, s + _TOKEN_BATCH))
                x = torch.stack([torch.full_like(ids, cls_id), ids, torch.full_like(ids, sep_id)],
                                dim=1)
                hidden = bert(input_ids=x, attention_mask=torch.ones_like(x)).last_hidden_state
                out[s:s + ids.numel()] = hidden.float().mean(dim=1).numpy()
                if bar is not None:
                    bar.update(ids.numel())
    finally:
        bert.train(was_training)
    return out


def _pca(x: np.ndarray, dims: int) -> np.ndarray:
    """Step 2: centred projection on the top ``dims`` principal axes (signs fixed)."""
    centred = x - x.mean(axis=0)
    cov = centred.T @ centred / max(len(x) - 1, 1)
    values, vectors = np.linalg.eigh(cov)
    axes = vectors[:, np.argsort(-values, kind="stable")[:dims]]
    flip = np.sign(axes[np.argmax(np.abs(axes), axis=0), np.arange(axes.shape[1])])
    return centred @ (axes * np.where(flip == 0, 1.0, flip))


def _sif_weights(n: int, a: float) -> np.ndarray:
    """Step 3: a / (a + p_i) with Zipf probabilities p_i ∝ 1 / (i + 2)."""
    inv_rank = 1.0 / np.arange(2, n + 2, dtype=np.float64)
    return a / (a + inv_rank / inv_rank.sum())


def distill(model: str | None = None, *, pca_dims: int = 256, sif_coefficient: float = 1e-4,
            cache: bool = True, show_progress: bool = False) -> StaticEmbedding:
    """The static model distilled from the sentence-transformers ``model`` (None: the packaged
    all-MiniLM-L6-v2), from the cache when it was distilled before on this machine (module
    docstring); ``show_progress``: a bar while it is distilled."""
    from .sentence_model import load_sentence_model, resolve_model

    path = resolve_model(model)
    if not os.path.isdir(path):
        from ..core.errors import InputError
        raise InputError(f"the static embedding is distilled from a model folder; {path!r} is "
                         "not one", fix="give --embedding-model a sentence-transformers folder, "
                                        "or choose --entity-embedding model")
    params = {"method": STATIC_METHOD, "pca_dims": int(pca_dims),
              "sif_coefficient": float(sif_coefficient)}
    key = hashlib.sha256((model_files_hash(path) + repr(sorted(params.items()))).encode()
                         ).hexdigest()
    if key in _LOADED:
        return _LOADED[key]
    from tokenizers import Tokenizer
    tokenizer = Tokenizer.from_file(os.path.join(path, "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    file = os.path.join(cache_folder(), f"{key[:32]}.npy")
    vectors = None
    if cache and os.path.exists(file):
        try:
            vectors = np.load(file, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            vectors = None
    if vectors is None:
        from .extraction import progress_bar
        st_model = load_sentence_model(model)
        bar = progress_bar(int(st_model[0].auto_model.config.vocab_size),
                           "distil the static embedding (once per machine)", show_progress,
                           unit="token")
        try:
            raw = _token_vectors(st_model, bar)
        finally:
            if bar is not None:
                bar.close()
        dims = min(int(pca_dims), raw.shape[1], raw.shape[0] - 1)
        vectors = (_pca(raw, dims) * _sif_weights(len(raw), sif_coefficient)[:, None]
                   ).astype(np.float32)
        if cache:
            from ..io.outputs import atomic_write
            os.makedirs(os.path.dirname(file), exist_ok=True)
            with atomic_write(file, "wb") as fh:
                np.save(fh, vectors, allow_pickle=False)
    static = StaticEmbedding(vectors, tokenizer, key,
                             {**params, "model": model or "all-MiniLM-L6-v2"})
    _LOADED[key] = static
    return static
