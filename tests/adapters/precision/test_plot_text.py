"""User strings in matplotlib text are drawn literally: no mathtext, no TeX, no parse error.

The report's figures are covered in test_security.py; this is the precision sweep's PNG (its
task name comes from the command line)."""

import matplotlib
import pytest

from mteb_stratified.adapters.precision import sweep as sw

NAME = r"$\foo^$ & co"


def _result(task):
    row = sw.SweepRow("minilm", "fp32", 1, *([0.0] * 12), 0.0, 0.0, 1.0, 1, 1.0, 1.0, 1.0, 0.0,
                      0.0)
    return sw.SweepResult("minilm", task, (row,), {"queries": 1}, (), ("q1",), {})


@pytest.mark.parametrize("usetex", [False, True])
def test_sweep_plot_draws_a_mathtext_task_name_literally(tmp_path, usetex):
    """Saved as SVG with text kept as text: the title holds the name as typed (also when the
    user's matplotlibrc turns TeX on)."""
    path = tmp_path / "sweep.svg"
    with matplotlib.rc_context({"svg.fonttype": "none", "text.usetex": usetex}):
        sw.plot_ranges([_result(NAME)], str(path))
    svg = path.read_text(encoding="utf-8")
    assert r"$\foo^$ &amp; co" in svg


def test_sweep_png_with_a_mathtext_task_name_is_saved(tmp_path):
    path = sw.plot_ranges([_result(NAME)], str(tmp_path / "sweep.png"))
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"


def test_an_expected_value_a_rounding_outside_its_min_max_still_plots(tmp_path):
    """E is computed apart from min and max and can land 1e-16 outside them; the error bars
    (E − min, max − E) must not go negative, or matplotlib refuses the plot and the sweep's
    files are lost with it."""
    from mteb_stratified.adapters.precision import sweep as sw

    e = 0.25
    row = sw.SweepRow("minilm", "binary", 1, *([e, e, 0.0, 0.0] * 3), 0.0, 0.0, 1.0, 1, 1.0,
                      1.0, 1.0, 0.0, 0.0, ndcg10_min=e + 6.7e-16, ndcg10_max=e + 6.7e-16,
                      rr10_min=e, rr10_max=e - 1e-16, r100_min=e, r100_max=e)
    res = sw.SweepResult("minilm", "nfcorpus", (row,), {"queries": 1})
    path = str(tmp_path / "p.png")
    assert sw.plot_ranges([res], path) == path
