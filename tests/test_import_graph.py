"""The house: import arrows point down the layers only, and there are no circles except the mteb
registration one (mteb has no entry points: its task and model modules must register with mteb
at import, which adapters/mteb/registration.py does and documents).

Every import counts, at module level or inside a function (a lazy import is still an arrow).
"""

import ast
import os

PACKAGE = "mteb_stratified"
ROOT = os.path.join(os.path.dirname(__file__), "..", PACKAGE)

#: The layers, bottom first (README "Layout"); a module may import only from layers below its own, or
#: from its own subpackage.
LAYERS = {
    "core": 0, "_optional": 0,
    "naming": 1,
    "io": 2,
    "llm": 2.5,
    "structure": 3, "api": 3, "__init__": 3.5,  # the package facade re-exports api and core
    "stratification": 4,
    "report": 5, "generation": 5,
    "adapters": 6, "testing": 6,
    "cli": 7,
    "__main__": 8,
}
#: The one allowed circle lives in these modules.
REGISTRATION = {"mteb_stratified.adapters.mteb.registration", "mteb_stratified.adapters.mteb.tasks",
                "mteb_stratified.adapters.mteb.models"}


def _modules():
    out = {}
    for dirpath, _, files in os.walk(ROOT):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, os.path.join(ROOT, ".."))[:-3].replace(os.sep, ".")
            out[rel[: -len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return out


def _edges(modules):
    edges = {m: set() for m in modules}
    for mod, path in modules.items():
        package = mod if path.endswith("__init__.py") else mod.rsplit(".", 1)[0]
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in ast.walk(tree):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                targets = [target] + [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for t in targets:
                while t and t not in modules:
                    t = t.rsplit(".", 1)[0] if "." in t else ""
                if t and t != mod:
                    edges[mod].add(t)
    return edges


def _layer(mod: str) -> str:
    parts = mod.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _upward(modules) -> list:
    """Every import that points up (or sideways between two layers of the same rank)."""
    upward = []
    for a, targets in _edges(modules).items():
        for b in targets:
            la, lb = _layer(a), _layer(b)
            if la != lb and LAYERS[la] <= LAYERS[lb]:
                upward.append(f"{a} -> {b} ({la} {LAYERS[la]} -> {lb} {LAYERS[lb]})")
    return sorted(upward)


def test_imports_point_down_the_layers():
    modules = _modules()
    assert {_layer(m) for m in modules} <= set(LAYERS), {_layer(m) for m in modules} - set(LAYERS)
    assert _upward(modules) == []


def _circles(edges) -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, sccs = {}, {}, [], set(), []
    counter = [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                sccs.append(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sccs


def test_no_circles_except_the_mteb_registration():
    sccs = _circles(_edges(_modules()))
    assert [sorted(c) for c in sccs if not c <= REGISTRATION] == []
    assert all("mteb_stratified.adapters.mteb.registration" in c for c in sccs)


#: Inside core, bottom first: the shared modules (errors, options, rng, jsonsafe, query_set),
#: then ranking evaluation, then the stratified statistics (which read per-query values and
#: intervals of ranking evaluation; ranking evaluation never imports them).
CORE_LAYERS = {"shared": 0, "ranking": 1, "stats": 2, "__init__": 3}


def _core_part(mod: str) -> str:
    parts = mod.split(".")
    if len(parts) == 2:
        return "__init__"
    return parts[2] if parts[2] in CORE_LAYERS else "shared"


def _core_upward(modules) -> list:
    """Every import inside core that points up its sub-layers (:data:`CORE_LAYERS`)."""
    out = []
    for a, targets in _edges(modules).items():
        if _layer(a) != "core":
            continue
        for b in targets:
            pa, pb = _core_part(a), _core_part(b)
            if pa != pb and CORE_LAYERS[pa] <= CORE_LAYERS[pb]:
                out.append(f"{a} -> {b} ({pa} -> {pb})")
    return sorted(out)


def test_core_ranking_evaluation_never_imports_the_stratified_statistics():
    modules = _modules()
    assert {_core_part(m) for m in modules if _layer(m) == "core"} == set(CORE_LAYERS)
    assert _core_upward(modules) == []


def test_the_core_scan_finds_a_planted_import_of_stats_from_ranking(tmp_path):
    up = tmp_path / "up.py"
    up.write_text("from ..stats.strata import QueryStrata\n", encoding="utf-8")
    modules = {**_modules(), "mteb_stratified.core.ranking._planted": str(up)}
    assert _core_upward(modules) == ["mteb_stratified.core.ranking._planted -> "
                                     "mteb_stratified.core.stats.strata (ranking -> stats)"]


def test_the_core_imports_nothing_above_it():
    edges = _edges(_modules())
    for mod, targets in edges.items():
        if _layer(mod) == "core":
            assert {_layer(t) for t in targets} <= {"core"}, (mod, targets)


def test_the_scans_find_a_planted_upward_import_and_a_planted_circle(tmp_path):
    """Both scans can fail: a planted core module that imports the report layer, and two
    planted core modules that import each other."""
    up = tmp_path / "up.py"
    up.write_text("def f():\n    from ..report.model import build_report\n", encoding="utf-8")
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from . import _planted_b\n", encoding="utf-8")
    b.write_text("from ._planted_a import x\n", encoding="utf-8")
    modules = {**_modules(), "mteb_stratified.core._planted_up": str(up),
               "mteb_stratified.core._planted_a": str(a),
               "mteb_stratified.core._planted_b": str(b)}
    assert _upward(modules) == ["mteb_stratified.core._planted_up -> mteb_stratified.report.model "
                                "(core 0 -> report 5)"]
    planted = {"mteb_stratified.core._planted_a", "mteb_stratified.core._planted_b"}
    assert planted in [c for c in _circles(_edges(modules))]
