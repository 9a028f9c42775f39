"""Quantized embeddings as an mteb ``SearchProtocol`` model: int8, binary, binary + rescore.

:class:`QuantizedSearch` wraps an mteb encoder (the packaged fp32 MiniLM for the registered
names ``mteb-stratified/all-MiniLM-L6-v2-int8``, ``-binary`` and ``-binary-rescore``, see
:mod:`.models`) and scores the way production vector search serves quantized embeddings, with
the functions of :mod:`mteb_stratified.adapters.precision.quantized`
(sentence-transformers' ``quantize_embeddings``, a FAISS ``IndexBinaryFlat``):

* :meth:`~QuantizedSearch.index` embeds the whole corpus once (fp32) and keeps only what the
  quantized representation needs: int8 codes and the calibration ranges (per-dimension min/max
  of the *corpus* embeddings), or the packed sign bits in a :class:`BinaryIndex` (plus the
  dequantized int8 vectors when the rescore multiplies int8 documents);
* :meth:`~QuantizedSearch.search` embeds the queries (fp32) and scores

  ======================  =================================================================
  ``int8``                s(q, d) = ⟨c(q), c(d)⟩, the integer dot product of the int8 codes
  ``binary``              s(q, d) = dim − popcount(b(q) XOR b(d)) (Hamming similarity)
  ``binary-rescore``      first stage: the top ``RESCORE_DEPTH·m`` by Hamming similarity
                          (FAISS's order inside a tie at that cut); then s(q, d) = ⟨q, 2·b(d)
                          − 1⟩ with the fp32 query (``rescore_docs="binary"``, ±1 documents)
                          or ⟨q, x̂(d)⟩ with the dequantized int8 codes (``"int8"``)
  ======================  =================================================================

  and returns each query's top ``top_k`` **plus every document tied with the k-th score**
  (:func:`~.search.keep_top_k_with_ties`), so the tie-aware expected value is exact.  A rescore
  returns its ``RESCORE_DEPTH·m`` rescored candidates (fewer when ``top_k`` is smaller, cut with
  whole tie groups): a deployment never sees more, so cutoffs past ``RESCORE_DEPTH·m`` (R@1000)
  count only those.  Integer scores are exact Python floats (int8 products stay below 2²⁴).
* Reranking tasks (``top_ranked`` given) score only each query's candidates the same way (int8
  or Hamming scores of the candidates; the rescore multiplies every candidate, no first stage).

Settings (``mteb.get_model(name, rescore_multiplier=4)`` or ``mteb-stratified mteb run
--model-kwargs '{"rescore_multiplier": 4}'``): ``quantization`` (``"int8"`` or ``"ubinary"``,
fixed by the model name), ``rescore_docs`` (``"binary"`` or ``"int8"``, rescoring names only)
and ``rescore_multiplier`` (an integer ≥ 1, default 2).  Settings other than the registered
name's are appended to the model's ``revision`` (``+ubinary-rescore-binary-x4``), so such a
run never lands in the default run's results folder (mteb also records them as
``experiment_kwargs``).

The first-stage cut of a rescore is audited: :attr:`QuantizedSearch.last_audit` (and a log
line) gives the share of queries whose ``RESCORE_DEPTH·m`` cut splits a tie group of Hamming
scores (FAISS chose which of its documents were rescored).
"""

from __future__ import annotations

import logging
from typing import Any, Callable

import numpy as np

from mteb_stratified.core.errors import InputError

from ..precision import quantized as q8
from ..precision.regimes import REGIMES

__all__ = ["QUANTIZED_SUFFIXES", "QuantizedSearch", "quantized_names", "check_settings",
           "settings_tag", "load_quantized"]

#: Model-name suffix -> precision regime (:mod:`..precision.regimes`) of the registered names.
QUANTIZED_SUFFIXES = {"-int8": "int8", "-binary": "binary", "-binary-rescore": "binary+rescore"}
#: Scores held at once in a full-corpus search: queries go in blocks of at most 256 and at most
#: this many (query, document) scores (2**25 float64: 256 MiB).
MAX_BLOCK_SCORES = 2 ** 25
#: The run summary goes to a child of mteb's logger (shown by the stock `mteb run` at -v 2).
_RUN_LOG = logging.getLogger("mteb.mteb_stratified")


def _regime_settings(regime: str) -> dict:
    r = REGIMES[regime]
    return {"quantization": r.quantization, "rescore_docs": r.rescore_docs,
            "rescore_multiplier": r.rescore_multiplier}


def quantized_names(base: str) -> dict[str, dict]:
    """``{base + suffix: loader kwargs}`` of the three quantized regimes."""
    return {base + suffix: _regime_settings(regime)
            for suffix, regime in QUANTIZED_SUFFIXES.items()}


def check_settings(quantization, rescore_docs=None, rescore_multiplier=None, *,
                   registered: "dict | None" = None, name: str = "") -> dict:
    """The validated settings, or an :class:`InputError` naming the valid values.

    ``registered``: the settings a registered model name stands for; its quantization cannot
    be changed, and a name without a rescoring step takes no rescoring settings.
    """
    if quantization not in q8.QUANTIZATIONS:
        raise InputError(f"unknown quantization {quantization!r}",
                         fix=f"use one of {', '.join(q8.QUANTIZATIONS)}")
    label = f"model {name!r}" if name else "this model"
    if registered is not None and quantization != registered["quantization"]:
        raise InputError(f"{label} quantizes to {registered['quantization']!r}; "
                         f"quantization={quantization!r} would be another model",
                         fix="use the registered name of that quantization (the -int8, -binary "
                             "and -binary-rescore variants of mteb-stratified/all-MiniLM-L6-v2)")
    if registered is not None and registered["rescore_docs"] is None and (
            rescore_docs is not None or rescore_multiplier is not None):
        raise InputError(f"{label} has no rescoring step, so rescore_docs/rescore_multiplier "
                         "do not apply", fix="use mteb-stratified/all-MiniLM-L6-v2-binary-rescore"
                                             " for a rescored binary search")
    if rescore_docs is None:
        if rescore_multiplier is not None:
            raise InputError("rescore_multiplier without rescore_docs",
                             fix=f"also give rescore_docs ({' or '.join(q8.RESCORE_DOCS)})")
        return {"quantization": quantization, "rescore_docs": None, "rescore_multiplier": None}
    if quantization != "ubinary" or rescore_docs not in q8.RESCORE_DOCS:
        raise InputError(f"rescoring {rescore_docs!r} documents after {quantization!r}",
                         fix=f"rescore a binary ('ubinary') first stage with rescore_docs "
                             f"{' or '.join(repr(d) for d in q8.RESCORE_DOCS)}")
    m = q8.check_rescore_multiplier(q8.DEFAULT_RESCORE_MULTIPLIER if rescore_multiplier is None
                                    else rescore_multiplier)
    return {"quantization": quantization, "rescore_docs": rescore_docs, "rescore_multiplier": m}


def settings_tag(settings: dict, registered: "dict | None") -> str:
    """``""`` for a registered name's own settings, else ``+<quantization>[-rescore-<docs>-x<m>]``
    (appended to the revision, so a run with other settings gets its own results folder)."""
    if registered is not None and dict(settings) == dict(registered):
        return ""
    tag = f"+{settings['quantization']}"
    if settings.get("rescore_docs"):
        tag += f"-rescore-{settings['rescore_docs']}-x{settings['rescore_multiplier']}"
    return tag


class QuantizedSearch:
    """An mteb ``SearchProtocol`` model scoring quantized embeddings (see module doc).

    ``encoder``: an mteb encoder (``encode`` with mteb's dataloaders); ``registered``: the
    settings of the registered name this model was loaded as (None: any other use).
    """

    #: Every list holds whole tie groups at its cut (the exact search's guarantee).
    keeps_tie_groups = True

    def __init__(self, encoder, *, quantization: str, rescore_docs: "str | None" = None,
                 rescore_multiplier: "int | None" = None,
                 registered: "dict | None" = None) -> None:
        self.settings = check_settings(quantization, rescore_docs, rescore_multiplier)
        self.encoder = encoder
        self.registered = registered
        self.last_audit: dict = {}
        self._state: "dict | None" = None
        self._meta = getattr(encoder, "mteb_model_meta", None)

    quantization = property(lambda self: self.settings["quantization"])
    rescore_docs = property(lambda self: self.settings["rescore_docs"])
    rescore_multiplier = property(lambda self: self.settings["rescore_multiplier"])

    @property
    def mteb_model_meta(self):
        """The model's meta, ``revision`` suffixed by :func:`settings_tag` when the settings are
        not the registered name's."""
        meta = self._meta
        tag = settings_tag(self.settings, self.registered)
        if not tag or meta is None or not hasattr(meta, "model_copy"):
            return meta
        revision = getattr(meta, "revision", None)
        return meta.model_copy(update={"revision": f"{revision}{tag}" if revision else tag[1:]})

    @mteb_model_meta.setter
    def mteb_model_meta(self, meta) -> None:  # mteb's load_model sets the registered meta
        self._meta = meta

    # encoding ----------------------------------------------------------------------------
    def embed(self, dataset, prompt_type, *, task_metadata, hf_split: str, hf_subset: str,
              encode_kwargs: "dict | None" = None, num_proc: "int | None" = None) -> np.ndarray:
        """fp32 (n, dim) embeddings of an mteb corpus or query dataset (``prompt_type`` a
        ``mteb.types.PromptType``), through mteb's dataloaders."""
        from mteb._create_dataloaders import create_dataloader

        kwargs = {"show_progress_bar": True, **(encode_kwargs or {})}
        loader = create_dataloader(dataset, task_metadata=task_metadata, prompt_type=prompt_type,
                                   batch_size=kwargs.get("batch_size", 32), num_proc=num_proc)
        emb = self.encoder.encode(loader, task_metadata=task_metadata, hf_split=hf_split,
                                  hf_subset=hf_subset, prompt_type=prompt_type, **kwargs)
        return q8.as_embeddings(emb, f"the {getattr(prompt_type, 'value', prompt_type)} "
                                     "embeddings")

    # SearchProtocol ----------------------------------------------------------------------
    def index(self, corpus, *, task_metadata, hf_split: str, hf_subset: str, encode_kwargs,
              num_proc: "int | None" = None, **kwargs: Any) -> None:
        """Embed the corpus and keep its quantized representation (module doc)."""
        from mteb.types import PromptType

        ids = [str(d) for d in corpus["id"]]
        emb = self.embed(corpus, PromptType.document, task_metadata=task_metadata,
                         hf_split=hf_split, hf_subset=hf_subset, encode_kwargs=encode_kwargs,
                         num_proc=num_proc)
        self._state = self.quantize_corpus(emb)
        self._state.update(ids=ids, position={d: i for i, d in enumerate(ids)})

    def quantize_corpus(self, emb: np.ndarray) -> dict:
        """What :meth:`index` keeps of the (N, dim) fp32 corpus embeddings ``emb``."""
        dim = int(emb.shape[1])
        state: dict = {"dim": dim, "n": len(emb)}
        if self.quantization == "int8":
            state["ranges"] = q8.calibration_ranges(emb)
            state["codes"] = q8.int8_codes(emb, state["ranges"])
        if self.quantization == "ubinary":
            state["packed"] = q8.binary_codes(emb)
            state["index"] = q8.BinaryIndex(state["packed"], dim)
        if self.rescore_docs is not None:
            state["vectors"] = q8.rescore_vectors(emb, self.rescore_docs, state.get("packed"))
        return state

    def search(self, queries, *, task_metadata, hf_split: str, hf_subset: str, top_k: int,
               encode_kwargs, top_ranked=None, num_proc: "int | None" = None,
               **kwargs: Any) -> dict[str, dict[str, float]]:
        """``{qid: {doc_id: score}}``: each query's top ``top_k`` with whole tie groups."""
        from mteb.types import PromptType

        if self._state is None:
            raise InputError("search() before index(): the corpus is not indexed",
                             fix="call index(corpus, ...) first (mteb's retrieval evaluator "
                                 "does)")
        q = self.embed(queries, PromptType.query, task_metadata=task_metadata, hf_split=hf_split,
                       hf_subset=hf_subset, encode_kwargs=encode_kwargs, num_proc=num_proc)
        qids = [str(x) for x in queries["id"]]
        if top_ranked is not None:
            ranked = self.rerank_embedded(q, qids, top_ranked, top_k)
        else:
            ranked = self.search_embedded(q, top_k)
        ids = self._state["ids"]
        return {qid: {ids[p]: float(s) for p, s in zip(pos, sc)}
                for qid, (pos, sc) in zip(qids, ranked)}

    # scoring -----------------------------------------------------------------------------
    def query_codes(self, q: np.ndarray) -> np.ndarray:
        """The queries' int8 codes (corpus ranges) or packed sign bits."""
        if self.quantization == "int8":
            return q8.int8_codes(q, self._state["ranges"])
        return q8.binary_codes(q)

    def _doc_vectors(self, positions: np.ndarray) -> np.ndarray:
        """The (n, dim) float32 rescoring vectors of documents: ±1 sign vectors, or the
        dequantized int8 codes (:func:`~..precision.quantized.rescore_vectors`)."""
        return self._state["vectors"](positions)

    def search_embedded(self, q: np.ndarray, top_k: int) -> list[tuple]:
        """Per query ``(positions, scores)`` of the full-corpus search of fp32 queries ``q``."""
        from .search import keep_top_k_with_ties

        codes, st = self.query_codes(q), self._state
        if self.rescore_docs is not None:
            return self._rescored(q, codes, top_k)
        self.last_audit = {"queries": len(q)}
        if self.quantization == "ubinary":  # FAISS's top k, widened to whole tie groups
            return [(pos, sims.astype(np.float64))
                    for pos, sims in st["index"].top_k_with_ties(codes, top_k)]
        out: list[tuple] = []
        size = max(1, min(256, MAX_BLOCK_SCORES // max(st["n"], 1)))
        for start in range(0, len(q), size):
            for row in q8.int8_scores(codes[start:start + size], st["codes"]):
                keep = keep_top_k_with_ties(row, top_k)
                out.append((keep, row[keep]))
        return out

    def _rescored(self, q: np.ndarray, codes: np.ndarray, top_k: int) -> list[tuple]:
        from .search import keep_top_k_with_ties

        index = self._state["index"]
        positions, scores, cut = q8.first_stage_rescore(index, q, codes, self._doc_vectors,
                                                        self.rescore_multiplier)
        out = []
        for pos, row in zip(positions, scores):
            keep = keep_top_k_with_ties(row, top_k)
            out.append((pos[keep], row[keep]))
        share = q8.cut_tied_share(index, codes, cut)
        self.last_audit = {"queries": len(q), "first_stage_depth": cut,
                           "cut_tied_queries": round(share * len(q)), "cut_tied_share": share}
        _RUN_LOG.info("binary first stage: the top-%d cut splits a tie group of Hamming scores "
                      "for %d of %d queries (FAISS chose which of those documents were "
                      "rescored)", cut, round(share * len(q)), len(q))
        return out

    def candidate_scores(self, q1: np.ndarray, code1: np.ndarray,
                         positions: np.ndarray) -> np.ndarray:
        """(C,) scores of one query (fp32 ``q1`` and its codes, shape (1, ·)) against the
        documents at ``positions``, no first stage."""
        st = self._state
        if self.rescore_docs is not None:
            return q8.rescore(q1, positions[None, :], self._doc_vectors)[0].astype(np.float64)
        if self.quantization == "int8":
            return q8.int8_scores(code1, st["codes"][positions])[0]
        sub = q8.BinaryIndex(st["packed"][positions], st["dim"])
        return sub.all_scores(code1)[0].astype(np.float64)

    def rerank_embedded(self, q: np.ndarray, qids: list, top_ranked, top_k: int) -> list[tuple]:
        """Per query ``(positions, scores)`` of its ``top_ranked`` candidates (ids not in the
        corpus are left out, as the exact search does)."""
        from .search import keep_top_k_with_ties

        codes, position = self.query_codes(q), self._state["position"]
        out = []
        for i, qid in enumerate(qids):
            cands = np.asarray([position[str(d)] for d in top_ranked.get(qid, ())
                                if str(d) in position], dtype=np.int64)
            if cands.size == 0:
                out.append((cands, np.empty(0)))
                continue
            row = self.candidate_scores(q[i:i + 1], codes[i:i + 1], cands)
            keep = keep_top_k_with_ties(row, top_k)
            out.append((cands[keep], row[keep]))
        self.last_audit = {"queries": len(q), "reranked": True}
        return out

    def __repr__(self) -> str:
        s = self.settings
        extra = (f", rescore_docs={s['rescore_docs']!r}, rescore_multiplier="
                 f"{s['rescore_multiplier']}" if s["rescore_docs"] else "")
        return f"QuantizedSearch({type(self.encoder).__name__}, {s['quantization']!r}{extra})"


#: Loader options that would change the fp32 embeddings or the float scoring: not for a
#: quantized model (its regime encodes in fp32 and scores the codes).
_FLOAT_ONLY = ("dtype", "score_dtype", "score_cast")


def load_quantized(encoder_loader: Callable, model_name: str, revision: "str | None" = None,
                   device: "str | None" = None, *, quantization=None, rescore_docs=None,
                   rescore_multiplier=None, registered: "dict | None" = None,
                   **kwargs: Any) -> QuantizedSearch:
    """mteb loader body: validate the settings (before any weights load), then wrap
    ``encoder_loader(model_name, revision, device, **kwargs)`` in :class:`QuantizedSearch`.

    A setting left out (None) is the registered name's (``registered``)."""
    given = {"quantization": quantization, "rescore_docs": rescore_docs,
             "rescore_multiplier": rescore_multiplier}
    if registered is not None:
        given = {k: registered[k] if v is None else v for k, v in given.items()}
    settings = check_settings(**given, registered=registered, name=model_name)
    model_kwargs = kwargs.get("model_kwargs") or {}
    bad = [k for k in _FLOAT_ONLY if kwargs.get(k) is not None]
    bad += [f"model_kwargs[{k!r}]" for k in ("dtype", "torch_dtype") if k in model_kwargs]
    if bad:
        raise InputError(f"{', '.join(bad)} do not apply to the quantized model {model_name!r}: "
                         "it encodes in fp32 and scores the quantized codes",
                         fix="leave them out, or use a float precision variant "
                             "(mteb-stratified/all-MiniLM-L6-v2-bf16, ...)")
    encoder = encoder_loader(model_name, revision, device, **kwargs)
    return QuantizedSearch(encoder, registered=registered, **settings)
