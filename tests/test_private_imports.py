"""One owner each: no private helper crosses a module boundary.

A ``_name`` is private to the module that defines it.  Another module of the package that needs
it should import a public name instead: the owner makes the helper public (a docstring, its
``__all__``), or the helper moves to the module that owns its concept.  The scan (ast, every
module of the package, imports inside functions included) fails on

* ``from X import _name`` where X is another module of the package (relative or absolute);
* ``mod._name`` where ``mod`` was bound by an import of a package module (``from . import mod``);
* a private module (``io/_text.py``, ``cli/_args.py``, ...) imported from outside its package.

Allowed: an alias ``from X import name as _name`` (the name imported is public), a private
module used inside its own package (``io/files.py`` importing ``io/_text``, ``cli/*`` importing
``cli/_args``; ``mteb_stratified/_optional.py`` is the whole package's), :data:`FACADE_HELPERS`
imported by a package's ``__init__``, and dunders.
"""

import ast
import os
import textwrap

PACKAGE = "mteb_stratified"
ROOT = os.path.join(os.path.dirname(__file__), "..", PACKAGE)
#: Private modules that serve the package facades (``__init__.py``), not one package: the lazy
#: public names of ``mteb_stratified``, ``mteb_stratified.core`` and ``mteb_stratified.io``.
FACADE_HELPERS = {"mteb_stratified.core._lazy"}


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _modules(root: str, package: str) -> dict:
    """``{dotted module name: path}`` of every .py file under ``root`` (the package folder)."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                mod = package if rel == "__init__" else f"{package}.{rel}"
                out[mod.removesuffix(".__init__")] = path
    return out


def _target(node: ast.ImportFrom, mod: str, is_package: bool) -> str:
    """The absolute module an ``ImportFrom`` reads from."""
    if not node.level:
        return node.module or ""
    parts = mod.split(".") if is_package else mod.split(".")[:-1]
    base = parts[: len(parts) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _private_module_problem(target: str, mod: str, modules: dict) -> str | None:
    """Why importing the package module ``target`` from ``mod`` is not allowed (None: it is)."""
    if target in FACADE_HELPERS and modules[mod].endswith("__init__.py"):
        return None
    parts = target.split(".")
    for i, part in enumerate(parts):
        if _private(part):
            home = ".".join(parts[:i])  # the package the private module belongs to
            if not (mod == home or mod.startswith(home + ".")):
                return f"private module {target} imported from outside {home}"
    return None


def _scan_module(mod: str, path: str, modules: dict) -> list:
    tree = ast.parse(open(path, encoding="utf-8").read(), filename=path)
    is_package = path.endswith("__init__.py")
    found, bound = [], {}  # bound: local name -> package module it stands for
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            target = _target(node, mod, is_package)
            if target != mod and target in modules:
                problem = _private_module_problem(target, mod, modules)
                if problem:
                    found.append(f":{node.lineno}: {problem}")
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in modules:  # `from pkg import module`
                    bound[alias.asname or alias.name] = sub
                    problem = _private_module_problem(sub, mod, modules)
                    if problem:
                        found.append(f":{node.lineno}: {problem}")
                elif target in modules and target != mod and _private(alias.name):
                    found.append(f":{node.lineno}: {alias.name} imported from {target}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules:
                    problem = _private_module_problem(alias.name, mod, modules)
                    if problem:
                        found.append(f":{node.lineno}: {problem}")
                    if alias.asname:
                        bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in bound and _private(node.attr)
                and bound[node.value.id] + "." + node.attr not in modules):
            found.append(f":{node.lineno}: {node.value.id}.{node.attr} "
                         f"read from {bound[node.value.id]}")
    return found


def private_imports(root: str, package: str) -> list:
    """Every private name or private module that crosses a module boundary under ``root``."""
    modules = _modules(root, package)
    found = []
    for mod, path in sorted(modules.items()):
        rel = os.path.relpath(path, os.path.dirname(os.path.abspath(root)))
        found += [f"{rel}{line}" for line in _scan_module(mod, path, modules)]
    return found


def test_no_private_helper_is_imported_across_modules():
    assert private_imports(ROOT, PACKAGE) == []


#: Names with one owner module: imported from it only, re-exported (``__all__``) by no other.
OWNED = {"md_cell": "mteb_stratified.io.markdown", "term_cell": "mteb_stratified.io.markdown"}


def test_owned_names_come_from_their_owner():
    wrong = []
    for mod, path in _modules(ROOT, PACKAGE).items():
        tree = ast.parse(open(path, encoding="utf-8").read(), filename=path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _target(node, mod, path.endswith("__init__.py"))
                wrong += [f"{mod}:{node.lineno}: {a.name} from {target}" for a in node.names
                          if OWNED.get(a.name, target) != target]
            elif (isinstance(node, ast.Assign) and mod not in OWNED.values()
                  and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)):
                names = {getattr(e, "value", None) for e in getattr(node.value, "elts", [])}
                wrong += [f"{mod}: re-exports {n}" for n in sorted(names & set(OWNED))]
    assert wrong == []


def _tree(tmp_path, files: dict) -> str:
    root = tmp_path / "pkg"
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return str(root)


def test_the_scan_fails_on_planted_violations(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "_optional.py": "def need(): pass\n",
        "a/__init__.py": "",
        "a/owner.py": "def _helper(): pass\ndef public(): pass\n",
        "a/_private.py": "def tool(): pass\n",
        "a/user.py": """\
            from .owner import public as _public, _helper
            from ._private import tool
            from .. import _optional
            def f():
                from pkg.a.owner import _helper as h
                return h
            """,
        "a/attr.py": "from . import owner\nowner._helper()\nowner.__name__\n",
        "b/__init__.py": "",
        "b/far.py": "from ..a._private import tool\nimport pkg.a._private as p\n",
    })
    found = private_imports(root, "pkg")
    assert sorted(found) == [
        "pkg/a/attr.py:2: owner._helper read from pkg.a.owner",
        "pkg/a/user.py:1: _helper imported from pkg.a.owner",  # relative
        "pkg/a/user.py:5: _helper imported from pkg.a.owner",  # absolute, in a function
        "pkg/b/far.py:1: private module pkg.a._private imported from outside pkg.a",
        "pkg/b/far.py:2: private module pkg.a._private imported from outside pkg.a",
    ]


def test_the_scan_passes_what_is_allowed(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "from .a.owner import public as _public\n__version__ = '1'\n",
        "_optional.py": "def need(): pass\n",
        "a/__init__.py": "from .. import __version__\n",
        "a/owner.py": "def _helper(): pass\ndef public(): pass\nx = _helper()\n",
        "a/_private.py": "def tool(): pass\n",
        "a/user.py": "from . import _private\nfrom ._private import tool\n_private.tool()\n",
        "b/__init__.py": "",
        "b/far.py": "from .._optional import need\nfrom .. import _optional\nimport os as _os\n",
    })
    assert private_imports(root, "pkg") == []
