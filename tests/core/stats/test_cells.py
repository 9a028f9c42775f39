"""The stratum cell has one owner: core/stats/cells.py encodes, decodes and names cells, with the
number of bins a parameter; no other module spells the encoding or the level names."""

import io
import itertools
import os
import tokenize

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.core.stats.cells import GRID, LEVELS, CellGrid, level_names
from mteb_stratified.core.stats.strata import Bins

PACKAGE = os.path.join(os.path.dirname(__file__), "..", "..", "mteb_stratified")
OWNER = os.path.normpath(os.path.join(PACKAGE, "core", "cells.py"))


def test_default_grid_is_low_med_high_and_na_4x4():
    assert LEVELS == ("Low", "Med", "High", "N/A") and GRID.shape == (4, 4)
    assert GRID.per_cluster == 16
    assert GRID.encode(4, 1, 2) == 4 * 16 + 1 * 4 + 2
    assert GRID.label(GRID.encode(4, 1, 2)) == (4, "Med", "High")
    assert GRID.label(GRID.encode(4, 3, 0)) == (4, "N/A", "Low")
    assert [GRID.rank("alignment", x) for x in LEVELS] == ["low", "mid", "high", "na"]
    plain = CellGrid(3, 3, na=False)
    assert plain.dispersion_levels == ("Low", "Med", "High") and plain.per_cluster == 9


@pytest.mark.parametrize("nd, nj", [(3, 3), (2, 2), (4, 3), (1, 5), (5, 2)])
def test_encode_decode_round_trip_for_any_bin_count(nd, nj):
    grid = CellGrid(nd, nj, na=False)
    codes = []
    for c, d, j in itertools.product(range(4), range(nd), range(nj)):
        code = grid.encode(c, d, j)
        assert grid.split(code) == (c, d, j)
        assert grid.label(code) == grid.label_of(c, d, j)
        codes.append(code)
    assert codes == list(range(grid.n_cells(4)))  # dense, in code order
    arr = grid.encode(np.array([0, 3]), np.array([nd - 1, 0]), np.array([0, nj - 1]))
    np.testing.assert_array_equal(np.stack(grid.split(arr)), [[0, 3], [nd - 1, 0], [0, nj - 1]])
    assert len(grid.all_labels(4)) == grid.n_cells(4)


def test_the_bins_set_the_grid():
    four = Bins(dispersion=(0.2, 0.5, 0.8), alignment=(0.1,), source="test")
    assert four.grid == CellGrid(5, 3)
    assert four.grid.dispersion_levels == ("Q1", "Q2", "Q3", "Q4", "N/A")
    assert four.grid.alignment_levels == ("Low", "High", "N/A")
    assert four.bin_dispersion([0.1, 0.3, 0.6, 0.9, np.nan]).tolist() == [0, 1, 2, 3, 4]
    assert Bins.from_reference(dispersion=np.linspace(0, 1, 101),
                               quantiles=(0.25, 0.5, 0.75)).grid.n_dispersion == 5
    with pytest.raises(InputError):
        level_names(0)
    with pytest.raises(InputError, match="unknown dispersion level"):
        GRID.index("dispersion", "Q7")


def test_strata_coverage_and_estimators_follow_a_four_bin_grid():
    """The encoding is used, not re-derived: a 4 x 2 grid works end to end."""
    from mteb_stratified.core import ClusterWeights, StratifiedDesign, stratify, strata_coverage

    w = ClusterWeights.from_dict({"a": {0: 1.0}, "b": {1: 1.0}, "c": {0: 0.5, 1: 0.5}}, 2)
    qrels = {"q1": {"a": 1}, "q2": {"b": 1, "c": 1}, "q3": {"a": 1, "c": 1}}
    ents = {"a": {"x"}, "b": {"y"}, "c": {"x", "z"}}
    bins = Bins(dispersion=(0.1, 0.5, 0.9), alignment=(0.4,))
    st = stratify(qrels, w, query_entities={"q1": {"x"}, "q2": {"q"}, "q3": {"x"}},
                  doc_entities=ents, bins=bins)
    assert st.grid == CellGrid(5, 3)
    cov = strata_coverage(st, [0.5, 0.5], scheme="cell", n_min=1)
    assert len(cov.units) == 2 * 15 and set(st.labels("cell")) <= set(cov.units)
    design = StratifiedDesign.from_strata(st, [0.5, 0.5], scheme="cell")
    assert set(design.labels[:design.n_covered]) == set(st.labels("cell"))


def _tokens(path):
    with open(path, encoding="utf-8") as fh:
        return list(tokenize.generate_tokens(io.StringIO(fh.read()).readline))


def test_no_other_module_spells_the_encoding_or_the_level_names():
    offenders = []
    for root, _, files in os.walk(PACKAGE):
        for name in files:
            path = os.path.normpath(os.path.join(root, name))
            if not name.endswith(".py") or path == OWNER:
                continue
            toks = [t for t in _tokens(path) if t.type not in (tokenize.NL, tokenize.NEWLINE,
                                                                 tokenize.COMMENT)]
            for i, t in enumerate(toks):
                where = f"{os.path.relpath(path, PACKAGE)}:{t.start[0]}"
                if t.type == tokenize.STRING and t.string.strip("'\"") in LEVELS \
                        and t.string[0] in "'\"" and len(t.string.strip("'\"")) + 2 == len(t.string):
                    offenders.append(f"{where} level name {t.string}")
                if t.type == tokenize.NUMBER and t.string in ("9", "3"):
                    near = {toks[i - 1].string if i else "", toks[i + 1].string if i + 1 < len(toks)
                            else ""}
                    ops = {"*", "//", "%"} if t.string == "9" else {"//", "%"}
                    if near & ops:
                        offenders.append(f"{where} cell arithmetic {near & ops} {t.string}")
                if t.string == "(" and i + 4 < len(toks) and \
                        [x.string for x in toks[i + 1:i + 5]] == ["3", ",", "3", ")"]:
                    offenders.append(f"{where} a (3, 3) cell table")
    assert offenders == []
