"""Scoring functions in an explicit dtype, dtype probing, and the fp32 head swap (no model)."""

import pytest

torch = pytest.importorskip("torch")

from mteb_stratified.adapters.precision import _torch as pt  # noqa: E402
from mteb_stratified.adapters.precision import scoring  # noqa: E402
from mteb_stratified.adapters.precision.hooks import upcast_head  # noqa: E402
from mteb_stratified.core.errors import InputError  # noqa: E402


def test_similarity_runs_in_the_requested_dtype():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(3, 16, generator=g).to(torch.bfloat16)
    d = torch.randn(50, 16, generator=g).to(torch.bfloat16)
    plain = scoring.similarity(q, d)
    upcast = scoring.similarity(q, d, score_dtype="float32")
    assert plain.dtype == torch.bfloat16 and upcast.dtype == torch.float32
    ref = torch.nn.functional.normalize(q.float(), dim=-1) @ torch.nn.functional.normalize(d.float(), dim=-1).T
    assert torch.allclose(upcast, ref, atol=1e-6)
    assert (upcast - plain.float()).abs().max() > 0  # bf16 rounding is visible
    assert scoring.similarity(q, d, fn="dot", score_dtype="fp32").shape == (3, 50)
    assert scoring.similarity(q, d, fn="euclidean", score_dtype="fp32").max() <= 0


def test_similarity_errors():
    x = torch.ones(2, 4)
    with pytest.raises(InputError, match="cosine"):
        scoring.similarity(x, x, fn="jaccard")
    with pytest.raises(InputError, match="score_dtype"):
        scoring.similarity(x, x.to(torch.bfloat16))


def test_softmax_equals_sigmoid_of_margin_in_fp32():
    g = torch.Generator().manual_seed(1)
    yes = torch.randn(1000, generator=g) * 5
    no = torch.randn(1000, generator=g) * 5
    p = scoring.yes_no_softmax(yes, no, score_dtype="float32")
    s = scoring.sigmoid(yes - no, score_dtype="float32")
    assert torch.allclose(p, s, atol=1e-6)
    ref = torch.softmax(torch.stack([no, yes], -1), -1)[:, 1]
    assert torch.allclose(p, ref, atol=1e-6)
    assert scoring.yes_no_softmax(yes.bfloat16(), no.bfloat16()).dtype == torch.bfloat16


def test_round_scores_and_exact_floats():
    x = torch.tensor([0.123456789, 0.1234, 0.9999999], dtype=torch.float32)
    r = scoring.round_scores(x, "bfloat16")
    assert r.dtype == torch.float32
    assert torch.equal(r, x.bfloat16().float())
    assert len(set(scoring.to_floats(r))) < len(set(scoring.to_floats(x)))
    b = torch.tensor([1 / 3], dtype=torch.bfloat16)
    assert scoring.to_floats(b)[0] == float(b.float()[0])  # the exact bf16 value


def test_dtype_names():
    assert pt.dtype_name("bf16") == "bfloat16"
    assert pt.dtype_name(torch.float16) == "float16"
    with pytest.raises(InputError, match="float32"):
        pt.dtype_name("fp8")


@pytest.mark.cpu_only
def test_unsupported_device_gives_a_clear_error():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.raises(pt.PrecisionUnsupportedError, match="not supported on device 'cuda'"):
        pt.check_dtype_supported("bfloat16", "cuda")


def test_unsupported_dtype_is_converted_into_a_clear_error(monkeypatch):
    def probe(torch_, dtype, device):
        raise RuntimeError('"addmm_impl_cpu_" not implemented for \'Half\'')

    monkeypatch.setattr(pt, "_probe", probe)
    monkeypatch.setattr(pt, "_CHECKED", {})
    with pytest.raises(pt.PrecisionUnsupportedError) as err:
        pt.check_dtype_supported("fp16", "cpu")
    text = str(err.value)
    assert "float16" in text and "addmm_impl_cpu_" in text and "fp32 always works" in text


def test_supported_dtype_passes():
    pt.check_dtype_supported("float32", "cpu")
    pt.check_dtype_supported("bfloat16", "cpu")


def test_upcast_head_runs_the_scoring_head_in_fp32_and_restores_it():
    class Tiny(torch.nn.Module):  # a scoring head with fixed weights: a layer test, not a model
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Linear(8, 8)
            self.classifier = torch.nn.Linear(8, 1)
            with torch.no_grad():
                self.body.weight.copy_(torch.eye(8))
                self.body.bias.zero_()
                self.classifier.weight.copy_(torch.linspace(-1, 1, 8)[None])
                self.classifier.bias.fill_(0.1)

        def forward(self, x):
            return self.classifier(self.body(x))

    m = Tiny().to(torch.bfloat16)
    x = torch.linspace(0, 1, 64).reshape(8, 8).to(torch.bfloat16)
    original = m.classifier
    low = m(x)
    with upcast_head(m, 1, torch.float32) as name:
        high = m(x)
    assert name == "classifier" and m.classifier is original
    assert low.dtype == torch.bfloat16 and high.dtype == torch.float32
    ref = torch.nn.functional.linear(m.body(x).float(), original.weight.float(), original.bias.float())
    assert torch.allclose(high, ref)
