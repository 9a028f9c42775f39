"""The report reads typed results by attribute: no ``x["key"]`` anywhere in ``report/``.

Every result the report renders is a frozen object (StratifiedSummary and its rows,
PairedSummary, Stability, ReportModel, CoverageReport); a string subscript would be a result
read as a dict, or a dict where a typed record belongs.
"""

import ast
from pathlib import Path

import mteb_stratified.report as report_package

REPORT = Path(report_package.__file__).parent


def string_subscripts(source: str, name: str) -> list:
    """``name:line: x["key"]`` for every subscript by a string constant in ``source``."""
    return [f"{name}:{node.lineno}: {ast.unparse(node)}"
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)]


def test_the_report_reads_no_result_by_string_subscript():
    found = [hit for path in sorted(REPORT.glob("*.py"))
             for hit in string_subscripts(path.read_text(encoding="utf-8"), path.name)]
    assert found == []


def test_the_scan_finds_a_planted_string_subscript():
    planted = "def f(summary):\n    return summary.per_stratum[0]['n'] + summary.n\n"
    assert string_subscripts(planted, "planted.py") == [
        "planted.py:2: summary.per_stratum[0]['n']"]
