"""Normalisation: case, punctuation, singular, stop words, abbreviations the text defines."""

import pytest

from mteb_stratified.structure.normalise import find_abbreviations, normalise_name, singular


@pytest.mark.parametrize("word,expected", [
    ("studies", "study"), ("vitamins", "vitamin"), ("boxes", "box"), ("analyses", "analysis"),
    ("diabetes", "diabetes"), ("status", "status"), ("women", "woman"), ("mice", "mouse"),
    ("virus", "virus"), ("pcs", "pcs"), ("fish", "fish")])
def test_singular(word, expected):
    assert singular(word) == expected


def test_abbreviations_defined_in_text():
    text = ("Plasma low-density lipoprotein cholesterol (LDL-C) fell. The Cox proportional "
            "hazards (CPH) model and high-density lipoprotein (HDL) were used (n = 30) (95%).")
    ab = find_abbreviations(text)
    assert ab == {"LDL-C": "low-density lipoprotein cholesterol",
                  "CPH": "Cox proportional hazards", "HDL": "high-density lipoprotein"}
    assert normalise_name("the LDL-C levels", ab) == "low-density lipoprotein cholesterol level"
    assert normalise_name("HDL", ab) == "high-density lipoprotein"
    assert normalise_name("HDL") == "hdl"  # no definition: left as is


@pytest.mark.parametrize("raw,expected", [
    ("These Studies", "study"), ("Breast-cancer patients!", "breast-cancer patient"),
    ("the  United   States", "united state"), ("statins’ effects", "statins effect"),
    ("we", None), ("31,236 cases", "case"), ("95%", None), ("it", None), ("a", None),
    ("significant reductions", "reduction"), ("x", None),
    ("red green blue cyan pink gray black", None)])
def test_normalise_name(raw, expected):
    assert normalise_name(raw) == expected


def test_normalise_is_idempotent():
    for raw in ["Omega-3 fatty acids", "Vitamin D supplements", "red meat intake"]:
        once = normalise_name(raw)
        assert normalise_name(once) == once
