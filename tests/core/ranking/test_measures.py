"""Measure names (ir_measures syntax), value objects, aliases and errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mteb_stratified.core import (AP, RR, InputError, Measure, P, R, Success, nDCG, parse_measure,
                                  parse_measures)
from mteb_stratified.core.ranking.measures import MEASURE_NAMES

from .._strategies import fixed

OPTIONAL_CUTOFF = ("nDCG", "RR", "AP")
REQUIRED_CUTOFF = ("R", "P", "Success")


@st.composite
def measure_texts(draw):
    """(text, expected canonical repr) for random valid names, cutoffs and parameters."""
    name = draw(st.sampled_from(MEASURE_NAMES))
    alias = draw(st.sampled_from({"nDCG": ["nDCG", "NDCG", "ndcg"], "RR": ["RR", "MRR", "mrr"],
                                  "R": ["R", "Recall", "recall"],
                                  "P": ["P", "Precision", "precision"],
                                  "AP": ["AP", "MAP", "map"],
                                  "Success": ["Success", "success"]}[name]))
    if name in REQUIRED_CUTOFF:
        k = draw(st.integers(1, 10**6))
    else:
        k = draw(st.none() | st.integers(1, 10**6))
    params, canon_params = "", ""
    if name == "nDCG":
        dcg = draw(st.sampled_from([None, "log2", "exp-log2"]))
        if dcg is not None:
            params = f"(dcg='{dcg}')" if draw(st.booleans()) else f'(dcg="{dcg}")'
            canon_params = "(dcg='exp-log2')" if dcg == "exp-log2" else ""
    else:
        rel = draw(st.none() | st.integers(0, 5))
        if rel is not None:
            params = f"(rel={rel})"
            canon_params = f"(rel={rel})"
    text = alias + params + ("" if k is None else f"@{k}")
    canon = name + canon_params + ("" if k is None else f"@{k}")
    return text, canon


@fixed(300)
@given(measure_texts())
def test_parse_repr_round_trip(pair):
    text, canon = pair
    m = parse_measure(text)
    assert repr(m) == canon
    assert str(m) == canon
    assert parse_measure(repr(m)) == m
    assert hash(parse_measure(repr(m))) == hash(m)
    assert parse_measure(m) is m


@pytest.mark.parametrize("text, canon", [
    ("MRR@10", "RR@10"), ("Recall@5", "R@5"), ("Precision@3", "P@3"), ("MAP", "AP"),
    ("MAP@100", "AP@100"), ("NDCG@10", "nDCG@10"), ("mrr", "RR"), ("success@1", "Success@1"),
    ("nDCG(dcg='log2')@10", "nDCG@10"), ("nDCG(dcg='exp-log2')@10", "nDCG(dcg='exp-log2')@10"),
    ("P(rel=2)@10", "P(rel=2)@10"), (" nDCG @ 10 ", "nDCG@10"), ("RR(rel=3)", "RR(rel=3)"),
])
def test_aliases_and_canonical_names(text, canon):
    assert repr(parse_measure(text)) == canon
    assert parse_measure(text) == parse_measure(canon)


def test_value_objects_build_like_ir_measures():
    assert nDCG @ 10 == parse_measure("nDCG@10")
    assert RR @ 10 == parse_measure("MRR@10")
    assert AP == parse_measure("AP")
    assert R @ 100 == parse_measure("R@100")
    assert P(rel=2) @ 10 == parse_measure("P(rel=2)@10")
    assert Success @ 1 == parse_measure("Success@1")
    assert nDCG(dcg="exp-log2") @ 5 == parse_measure("nDCG(dcg='exp-log2')@5")
    assert Measure("MRR", 10) == Measure("RR", 10)
    assert len({parse_measure("MRR@10"), parse_measure("RR@10"), parse_measure("RR@5")}) == 2
    m = parse_measure("nDCG@10")
    with pytest.raises(AttributeError):
        m.cutoff = 5  # frozen
    assert m.param("dcg") == "log2"
    assert parse_measure("P(rel=2)@3").param("rel") == 2


@pytest.mark.parametrize("text, hint", [
    ("nDGC@10", "nDCG"), ("nDCG10", "nDCG"), ("Recal@5", "Recall"), ("MRRR@10", "MRR"),
    ("Sucess@1", "Success"),
])
def test_unknown_names_suggest_the_nearest(text, hint):
    with pytest.raises(InputError) as err:
        parse_measure(text)
    assert hint in str(err.value)
    assert "did you mean" in str(err.value)


@pytest.mark.parametrize("text", ["P", "R", "Success", "P(rel=2)", "Recall", "Precision"])
def test_cutoff_required(text):
    with pytest.raises(InputError, match="cutoff"):
        parse_measure(text)


@pytest.mark.parametrize("text", ["P@0", "nDCG@0", "P@-1", "RR@1.5", "AP@x", "R@", "P@10@10",
                                  "nDCG@²", "nDCG@١٠x", "P@1e3"])
def test_bad_cutoffs(text):
    with pytest.raises(InputError):
        parse_measure(text)


@pytest.mark.parametrize("text", ["P(foo=1)@5", "nDCG(dcg='exp')@5", "nDCG(rel=2)@5",
                                  "P(rel=1.5)@5", "P(rel=True)@5", "P(rel)@5", "P(rel='x')@5",
                                  "RR(dcg='log2')"])
def test_bad_parameters(text):
    with pytest.raises(InputError):
        parse_measure(text)


@pytest.mark.parametrize("bad", [None, 10, 1.5, b"nDCG@10", ["nDCG@10"]])
def test_non_string_measures(bad):
    with pytest.raises(InputError):
        parse_measure(bad)


def test_measure_constructor_validates():
    for args in [("nDCG", 0), ("RR", -3), ("RR", True), ("RR", 1.0), ("RR", "10"), ("xyz", 3)]:
        with pytest.raises(InputError):
            Measure(*args)
    for name in REQUIRED_CUTOFF:  # a cutoff is required whatever the way the measure is built
        with pytest.raises(InputError):
            Measure(name)


def test_parse_measures():
    assert parse_measures("nDCG@10") == (parse_measure("nDCG@10"),)
    assert parse_measures(["nDCG@10", "RR@10", P @ 5]) == (nDCG @ 10, RR @ 10, P @ 5)
    with pytest.raises(InputError, match="twice"):
        parse_measures(["RR@10", "MRR@10"])
    with pytest.raises(InputError, match="twice"):
        parse_measures(["nDCG@10", "nDCG(dcg='log2')@10"])
    with pytest.raises(InputError):
        parse_measures([])


@fixed(300)
@given(st.text(max_size=20) | st.from_regex(r"[A-Za-z]{1,8}(\(.{0,8}\))?@.{0,4}", fullmatch=True))
def test_any_text_parses_or_raises_input_error(text):
    """Garbage never escapes as another exception type; what parses round-trips."""
    try:
        m = parse_measure(text)
    except InputError:
        return
    assert parse_measure(repr(m)) == m


@pytest.mark.parametrize("wrong, suggested", [
    ("ndcg_cut_10", "nDCG@10"), ("P_10", "P@10"), ("recall_100", "R@100"),
    ("map_cut_100", "AP@100"), ("recip_rank", "RR"), ("success_1", "Success@1"),
    ("P.5", "P@5"), ("nDGC@10", "nDCG@10"), ("Recal@5", "Recall@5"), ("Sucess@1", "Success@1")])
def test_suggestions_are_valid_names(wrong, suggested):
    """trec_eval/pytrec_eval names get their translation; every suggestion parses."""
    from mteb_stratified.core.ranking.measures import _suggestions

    with pytest.raises(InputError) as err:
        parse_measure(wrong)
    got = _suggestions(wrong)
    assert got[0] == suggested and f"did you mean {suggested}" in str(err.value)
    for name in got:
        parse_measure(name)
