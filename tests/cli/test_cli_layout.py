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


def _imports(path: str, root: str = os.path.dirname(PACKAGE)) -> list[tuple[int, str, str]]:
    """``(line, module, name)`` of every ``from X import name`` in a file, X resolved to a
    dotted module of the package (relative imports included; ``root`` holds the package)."""
    rel = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
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
    assert ("mteb_stratified.report", "build") in found


# -- issue #49: the commands that only map flags ---------------------------------------------
#: The commands whose library work lives in one entry point (stratification.stratify_results,
#: report.build, generation.run; the leaderboard's in adapters.mteb.results).
MAPPING_ONLY = ("stratify", "report", "generate", "leaderboard")
#: What such a command may take from io: escaping for the terminal and the output-path checks
#: made before any work (a bad -o exits 2 at once).
IO_ALLOWED = {"term_cell", "output_dir", "output_file"}


def library_work(path: str, root: str = os.path.dirname(PACKAGE)) -> list[str]:
    """Where the command module at ``path`` does library work itself: a name from ``core``
    that is neither an error/warning class nor an UPPER_CASE constant, any name from ``io``
    besides :data:`IO_ALLOWED`, or a JSON file read or written (``json.load``/``json.dump``)."""
    bad = []
    for line, module, name in _imports(path, root):
        where = f"{os.path.basename(path)}:{line}"
        if module == "mteb_stratified.core" or module.startswith("mteb_stratified.core."):
            if not (name.endswith(("Error", "Warning")) or name.isupper()):
                bad.append(f"{where} imports {name} from {module}")
        elif module == "mteb_stratified.io" or module.startswith("mteb_stratified.io."):
            if name not in IO_ALLOWED:
                bad.append(f"{where} imports {name} from {module}")
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "json"
                and node.func.attr in ("load", "dump")):
            bad.append(f"{os.path.basename(path)}:{node.lineno} json.{node.func.attr}")
    return bad


def test_the_mapping_commands_do_no_library_work():
    bad = [b for name in MAPPING_ONLY for b in library_work(os.path.join(CLI, name + ".py"))]
    assert not bad, "\n".join(bad)


def test_the_library_work_scan_finds_planted_work(tmp_path):
    """The scan fails on a command that orchestrates: a planted command module (in a copy of
    the package's layout, so its relative imports resolve as a command's)."""
    folder = tmp_path / "mteb_stratified" / "cli"
    folder.mkdir(parents=True)
    planted = folder / "_planted_layout_check.py"
    planted.write_text("import json\n"
                       "from ..core import InputError, DEFAULT_N_MIN\n"
                       "from ..core.per_query import PerQuery\n"
                       "from ..io.outputs import atomic_write, output_dir\n\n"
                       "def run(args):\n"
                       "    data = json.load(open(args.path))\n"
                       "    json.dump(data, open(args.path, 'w'))\n", encoding="utf-8")
    found = library_work(str(planted), str(tmp_path))
    assert found == ["_planted_layout_check.py:3 imports PerQuery from mteb_stratified.core."
                     "per_query",
                     "_planted_layout_check.py:4 imports atomic_write from mteb_stratified.io."
                     "outputs",
                     "_planted_layout_check.py:7 json.load",
                     "_planted_layout_check.py:8 json.dump"], found
