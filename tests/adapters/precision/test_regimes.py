"""Regime names: canonical names, aliases, metadata, and the error that lists valid names."""

import pytest

from mteb_stratified.adapters.precision.regimes import (REGIME_NAMES, REGIMES, get_regime,
                                                        parse_regimes)
from mteb_stratified.core.errors import InputError


def test_nine_regimes_in_table_order():
    assert REGIME_NAMES == ("fp32", "bf16", "fp16", "bf16+hps", "fp16+hps", "scores-bf16",
                            "int8", "binary", "binary+rescore")


@pytest.mark.parametrize("name,model,score,hps,result", [
    ("fp32", "float32", "float32", False, "float32"),
    ("bf16", "bfloat16", "bfloat16", False, "bfloat16"),
    ("fp16", "float16", "float16", False, "float16"),
    ("bf16+hps", "bfloat16", "float32", True, "float32"),
    ("fp16+hps", "float16", "float32", True, "float32"),
    ("scores-bf16", "float32", "float32", False, "bfloat16"),
    ("int8", "float32", "int32", False, "int32"),
    ("binary", "float32", "int32", False, "int32"),
    ("binary+rescore", "float32", "float32", True, "float32"),
])
def test_regime_dtypes(name, model, score, hps, result):
    r = get_regime(name)
    assert (r.model_dtype, r.score_dtype, r.hps, r.result_dtype) == (model, score, hps, result)
    meta = r.metadata()
    assert meta["regime"] == name and meta["score_dtype"] == score and meta["hps"] is hps


def test_aliases_and_case():
    assert get_regime("BF16+HPS") is REGIMES["bf16+hps"]
    assert get_regime(" fp16-hps ") is REGIMES["fp16+hps"]
    assert get_regime("bfloat16") is REGIMES["bf16"]
    assert get_regime(REGIMES["fp32"]) is REGIMES["fp32"]


def test_unknown_regime_lists_valid_names():
    with pytest.raises(InputError) as err:
        get_regime("int4")
    text = str(err.value)
    assert "int4" in text
    for name in REGIME_NAMES:
        assert name in text


def test_quantized_regimes_record_their_settings_and_groups_expand():
    assert get_regime("binary+rescore").with_rescore("binary", 2) == REGIMES["binary+rescore"]
    assert get_regime("binary+rescore").with_rescore(None, 4).name == "binary+rescore[binary,x4]"
    meta = get_regime("binary+rescore").with_rescore("int8", 4).metadata()
    assert meta["regime"] == "binary+rescore[int8,x4]"
    again = get_regime("binary+rescore").with_rescore("int8", 4).with_rescore(None, 3)
    assert again.name == "binary+rescore[int8,x3]"  # the settings are named once, not stacked
    assert (meta["quantization"], meta["rescore_docs"], meta["rescore_multiplier"]) == \
        ("ubinary", "int8", 4)
    assert get_regime("int8").with_rescore("int8", 4) is REGIMES["int8"]  # nothing to rescore
    assert get_regime("ubinary") is REGIMES["binary"]
    assert [r.name for r in parse_regimes("quantized")] == ["int8", "binary", "binary+rescore"]
    assert [r.name for r in parse_regimes(["fp32", "quantized"])][:2] == ["fp32", "int8"]
    assert len(parse_regimes("all")) == len(REGIME_NAMES)


def test_parse_regimes():
    assert [r.name for r in parse_regimes("fp32,bf16+hps")] == ["fp32", "bf16+hps"]
    assert [r.name for r in parse_regimes(["bf16", "bf16", "fp32"])] == ["bf16", "fp32"]
    assert [r.name for r in parse_regimes(None)] == list(REGIME_NAMES[:6])  # the float ones
    with pytest.raises(InputError, match="valid regimes"):
        parse_regimes(["fp32", "fp8"])
    with pytest.raises(InputError):
        parse_regimes([","])


def test_regimes_module_does_not_import_torch():
    import subprocess
    import sys

    code = ("import sys; import mteb_stratified.adapters.precision as p; "
            "p.get_regime('bf16'); print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
