"""No function in the package is over 100 lines unless its docstring says why it must be long
(issue #31): long functions are where mutable locals pile up."""

from __future__ import annotations

import ast
import os

import mteb_stratified

PACKAGE = os.path.dirname(mteb_stratified.__file__)
MAX_LINES = 100
#: What a long function's docstring says to be let through.
EXCUSE = "must be long"


def _long_functions(root: str = PACKAGE) -> list[str]:
    out = []
    for folder, _, names in os.walk(root):
        for name in names:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            tree = ast.parse(open(path, encoding="utf-8").read(), path)
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    lines = node.end_lineno - node.lineno + 1
                    doc = ast.get_docstring(node) or ""
                    if lines > MAX_LINES and EXCUSE not in doc:
                        out.append(f"{os.path.relpath(path, PACKAGE)}:{node.lineno} "
                                   f"{node.name}: {lines} lines")
    return out


def test_no_function_is_over_100_lines():
    assert _long_functions() == []


def test_the_check_sees_a_long_function(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "long.py").write_text(f"def f():\n{body}\n\n\ndef g():\n"
                                      f"    '''It must be long: a table.'''\n{body}\n")
    assert [r.split(" ", 1)[1] for r in _long_functions(str(tmp_path))] == [
        f"f: {MAX_LINES + 1} lines"]
