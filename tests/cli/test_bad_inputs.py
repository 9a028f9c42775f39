"""Every case of the bad-input catalogue (``bad_inputs.py``) gets the correct number or a
clear error: never a traceback, never a silently wrong number."""

from __future__ import annotations

import pytest

from bad_inputs import BOUNDED, CASES, Case, Error, Value, Works, run_bounded, run_case


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input(case, tmp_path):
    outcome, detail = run_case(case, str(tmp_path))
    want = "correct" if isinstance(case.expect, (Value, Works)) else "clear"
    assert outcome == want, f"{case.finding}: {outcome}: {detail}"


def test_the_classifier_can_fail(tmp_path):
    """The harness itself: a case expecting an error on good input is 'wrong', one expecting
    the wrong line is 'unclear', one expecting a different number is 'wrong'."""
    from bad_inputs import _GOOD, _Q, _eval, _value

    ok, _ = run_case(Case("good", "", _GOOD, _eval(), Error("run", 1)), str(tmp_path / "a"))
    assert ok == "wrong"
    bad = dict(_GOOD, run=_GOOD["run"] + "q2 Q0 x 1 nan tag\n")
    line, _ = run_case(Case("line", "", bad, _eval(), Error("run", 3, "score")),
                       str(tmp_path / "b"))
    assert line == "unclear"
    other = {"q1": {"d1": 0, "d2": 0, "d3": 2}, "q2": _Q["q2"]}
    num, _ = run_case(Case("num", "", _GOOD, _eval(), _value(qrels=other)), str(tmp_path / "c"))
    assert num == "wrong"


@pytest.mark.parametrize("case", BOUNDED, ids=[c.id for c in BOUNDED])
def test_refused_fast_and_small(case, tmp_path):
    """A device, a FIFO, a gzip bomb, a line without end: exit 2 with a clear message, in
    seconds and under 200 MiB, measured in a child process."""
    outcome, detail, seconds, rss = run_bounded(case, str(tmp_path))
    assert outcome == "clear", f"{case.finding}: {outcome}: {detail} ({seconds:.1f} s, " \
                               f"{rss:.0f} MiB)"
