"""The CLI maps flags onto the library and holds no library logic (issue #31): no function of
``cli/`` is imported by the library (``report/``, ``stratification/`` or any other package), and
one command never imports another command's module, only the shared flag helpers
(``cli/_*.py``).  ``main`` is the dispatcher that loads the commands."""

from __future__ import annotations

import ast
import os

import mteb_stratified

PACKAGE = os.path.dirname(mteb_stratified.__file__)
CLI = os.path.join(PACKAGE, "cli")


def _imports(path: str) -> list[tuple[int, str, str]]:
    """``(line, module, name)`` of every ``from X import name`` in a file, X resolved to a
    dotted module of the package (relative imports included)."""
    rel = os.path.relpath(path, os.path.dirname(PACKAGE))[:-3].replace(os.sep, ".")
    here = rel.split(".")[:-1]  # the package a relative import starts from
    out = []
    for node in ast.walk(ast.parse(open(path, encoding="utf-8").read(), path)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                out.append((node.lineno, module, alias.name))
        elif isinstance(node, ast.Import):
            out.extend((node.lineno, alias.name, "") for alias in node.names)
    return out


def _files(folder: str):
    for root, _, names in os.walk(folder):
        for name in names:
            if name.endswith(".py"):
                yield os.path.join(root, name)


def test_the_library_never_imports_the_cli():
    bad = []
    for path in _files(PACKAGE):
        if path.startswith(CLI + os.sep) or os.path.basename(path) == "__main__.py":
            continue
        for line, module, name in _imports(path):
            target = f"{module}.{name}" if name else module
            if module == "mteb_stratified.cli" or module.startswith("mteb_stratified.cli.") \
                    or target.startswith("mteb_stratified.cli."):
                bad.append(f"{os.path.relpath(path, PACKAGE)}:{line} imports {target}")
    assert not bad, "\n".join(bad)


def test_a_command_imports_no_other_commands_module():
    commands = {n[:-3] for n in os.listdir(CLI)
                if n.endswith(".py") and not n.startswith("_") and n != "main.py"}
    assert {"stratify", "report", "generate", "structure", "evaluate"} <= commands
    bad = []
    for name in sorted(commands):
        for line, module, imported in _imports(os.path.join(CLI, name + ".py")):
            other = module.rsplit(".", 1)[-1] if module.startswith("mteb_stratified.cli.") \
                else (imported if module == "mteb_stratified.cli" else None)
            if other in commands and other != name:
                bad.append(f"cli/{name}.py:{line} imports from cli/{other}.py")
    assert not bad, "\n".join(bad)


def test_the_scan_resolves_relative_imports():
    """The scan can see what it looks for: relative imports resolve to package modules."""
    path = os.path.join(CLI, "report.py")
    found = [(m, n) for _, m, n in _imports(path)]
    assert ("mteb_stratified.cli._strata_args", "load_context") in found
    assert ("mteb_stratified.io.mteb_results", "resolve_inputs") in found
