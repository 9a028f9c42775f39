"""HPS on the real packaged SmolLM2-135M-Instruct used as a yes/no reranker (softmax and sigmoid).

No cross-encoder with real weights is available offline, so the sigmoid path is tested on the
same LLM's yes−no logit margin: σ(ℓ_yes − ℓ_no).
"""

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from mteb_stratified.adapters.precision import YesNoReranker, hps  # noqa: E402
from mteb_stratified.core.errors import InputError  # noqa: E402

from .conftest import doc_text  # noqa: E402

N_DOCS = 24
MAX_LENGTH = 96


@pytest.fixture(scope="module")
def pairs(nfcorpus):
    qid = sorted(nfcorpus.qrels)[0]
    docs = [doc_text(d) for d in list(nfcorpus.corpus.values())[:N_DOCS]]
    return [(nfcorpus.queries[qid], d) for d in docs]


@pytest.fixture(scope="module")
def hidden(smollm2, pairs):
    """One forward pass per model dtype; every scoring variant reuses it."""
    fp32, bf16, tok = smollm2
    r32 = YesNoReranker(fp32, tok, max_length=MAX_LENGTH)
    r16 = YesNoReranker(bf16, tok, max_length=MAX_LENGTH)
    return r32, r32.last_hidden(pairs), r16, r16.last_hidden(pairs)


def distinct(t) -> int:
    return len(set(t.float().tolist()))


@pytest.mark.parametrize("activation", ["softmax", "sigmoid"])
def test_bf16_loses_distinct_scores_and_hps_restores_them(hidden, pairs, activation):
    r32, h32, r16, h16 = hidden
    fp32 = r32.with_activation(activation).scores_from_hidden(h32)
    bf16 = r16.with_activation(activation).scores_from_hidden(h16)
    hps16 = hps(r16.with_activation(activation)).scores_from_hidden(h16)
    assert fp32.dtype == torch.float32 and bf16.dtype == torch.bfloat16
    assert hps16.dtype == torch.float32
    n_texts = len({d for _, d in pairs})
    print(f"{activation}: distinct scores over {len(pairs)} pairs: fp32 {distinct(fp32)}, "
          f"bf16 {distinct(bf16)}, bf16+hps {distinct(hps16)}")
    assert distinct(fp32) == n_texts
    assert distinct(bf16) < distinct(fp32)
    assert distinct(hps16) == distinct(fp32)
    assert (hps16 - fp32).abs().max() < 0.1  # same ranking signal, bf16 forward noise only


def test_softmax_and_sigmoid_paths_agree_in_fp32(hidden):
    r32, h32, _, _ = hidden
    soft = r32.with_score_dtype("float32").scores_from_hidden(h32)
    sig = r32.with_score_dtype("float32").with_activation("sigmoid").scores_from_hidden(h32)
    assert torch.allclose(soft, sig, atol=1e-6)


def test_recomputed_logits_equal_the_models_own(smollm2, hidden, pairs):
    fp32, _, tok = smollm2
    r32, h32, _, _ = hidden
    yes, no = r32.logits_from_hidden(h32[:1])
    ids = torch.tensor([r32.encode_pairs(pairs[:1])[0]])
    with torch.inference_mode():
        full = fp32(input_ids=ids).logits[0, -1]
    assert torch.allclose(yes[0], full[r32.yes_id], atol=1e-3)
    assert torch.allclose(no[0], full[r32.no_id], atol=1e-3)
    # the end-to-end predict() path gives the same scores as the two-step path
    assert torch.allclose(r32.predict(pairs[:2]), r32.scores_from_hidden(h32[:2]), atol=1e-5)


def test_prompt_follows_the_qwen3_reranker_layout(hidden):
    from mteb_stratified.adapters.precision.reranker import QWEN3_RERANKER

    text = QWEN3_RERANKER.render("q?", "a doc")
    assert text.startswith("<|im_start|>system\nJudge whether the Document")
    assert "<Query>: q?\n<Document>: a doc" in text
    assert text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    r32 = hidden[0]
    ids = r32.encode_pairs([("q", "word " * 1000)])[0]
    assert len(ids) == MAX_LENGTH  # only the body is truncated
    assert ids[-len(r32._suffix_ids):] == r32._suffix_ids


def test_tokenizer_without_single_yes_no_tokens(smollm2):
    fp32, _, tok = smollm2
    with pytest.raises(InputError, match="no single token for 'yes please'"):
        YesNoReranker(fp32, tok, yes_token="yes please")
    with pytest.raises(InputError, match="one token id"):
        YesNoReranker(fp32, tok, yes_token="yes", no_token="yes")


def test_hps_on_a_bare_causal_lm_says_how_to_wrap_it(smollm2):
    fp32, _, tok = smollm2
    with pytest.raises(InputError, match="YesNoReranker"):
        hps(fp32)
    r = hps(YesNoReranker(fp32, tok, max_length=MAX_LENGTH))
    assert isinstance(r, YesNoReranker) and r.score_dtype == "float32"


def test_bad_arguments(smollm2):
    fp32, _, tok = smollm2
    with pytest.raises(InputError, match="softmax"):
        YesNoReranker(fp32, tok, activation="tanh")
    with pytest.raises(InputError, match="max_length"):
        YesNoReranker(fp32, tok, max_length=40)
