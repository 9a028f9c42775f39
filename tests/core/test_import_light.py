"""Layering and start-up: the numeric core imports nothing heavier than numpy/scipy, and
``import mteb_stratified`` loads none of scipy's slow subpackages nor any heavy package (the
names that need them load on first use)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import mteb_stratified
import mteb_stratified.core as core
import mteb_stratified.io as io_package

REPO = Path(__file__).resolve().parents[2]
BLOCKED = ["torch", "mteb", "igraph", "transformers", "sentence_transformers", "pandas",
           "sklearn", "pytrec_eval", "trm"]
#: What a start-up must not load: scipy's slow subpackages (scipy.stats alone takes longer than
#: the whole package should) and every heavy package, installed or not.
HEAVY = ("scipy.stats", "scipy.special", "scipy.sparse", "scipy.optimize", "scipy.linalg",
         *BLOCKED, "pyarrow", "polars", "matplotlib", "numba", "requests", "httpx", "openai")


def heavy_after(code: str) -> tuple[list, str]:
    """Run ``code`` in a fresh interpreter started as a user's is (site, the mteb auto-load hook)
    and return the :data:`HEAVY` modules it left in ``sys.modules``, and its stdout before them."""
    probe = (code + "\nimport json, sys\n"
             f"print(json.dumps(sorted(m for m in {HEAVY!r} if m in sys.modules)))\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", probe], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out, _, last = proc.stdout.rstrip("\n").rpartition("\n")
    return json.loads(last), out


def test_core_imports_and_runs_without_heavy_packages():
    """Block the heavy packages with a meta-path finder that refuses them, then import the core
    and evaluate.  (Putting ``None`` into ``sys.modules`` would block them too, but scipy.stats'
    array-API helpers read ``sys.modules["torch"].Tensor`` whenever the name is present, so that
    form breaks scipy itself rather than testing the core.)"""
    code = textwrap.dedent(f"""
        import sys
        BLOCKED = set({BLOCKED!r})

        class Block:
            def find_spec(self, fullname, path=None, target=None):
                if fullname.split(".")[0] in BLOCKED:
                    raise ModuleNotFoundError(f"blocked by the test: {{fullname}}")
                return None

        sys.meta_path.insert(0, Block())
        for name in list(sys.modules):
            assert name.split(".")[0] not in BLOCKED, name  # nothing heavy was loaded at startup
        import mteb_stratified.core as core
        from mteb_stratified.core import evaluate_dicts, evaluate_matrices
        res = evaluate_dicts({{"q": {{"a": 1, "b": 2}}}}, {{"q": {{"a": 1.0, "b": 1.0, "c": 0.5}}}},
                             ["nDCG@10", "RR@10", "R@100", "P@10", "AP@100", "Success@1"])
        assert abs(res["P@10"].expected - 0.2) < 1e-12, res["P@10"]
        res.to_dict(per_query=True); res.to_json(); res.table()
        res = evaluate_matrices([[0.5, 0.5]], [[1, 0]], ["RR"])
        assert res["RR"].expected == 0.75
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        assert not heavy, heavy
        print("ok")
    """)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    env["MTEB_STRATIFIED_NO_AUTOLOAD"] = "1"
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_core_source_has_no_heavy_imports():
    """Belt and braces: no module of the core names a heavy package in an import statement
    (``to_dataframe`` imports pandas lazily, inside the method), and scipy is imported only
    inside the functions that use it, never at module level (it would slow every start-up)."""
    core = REPO / "mteb_stratified" / "core"
    for path in core.glob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped.startswith(("import ", "from ")) and not line.startswith((" ", "\t")):
                mod = stripped.split()[1].split(".")[0]
                assert mod not in BLOCKED and mod != "scipy", f"{path.name}: {line}"


def test_import_loads_nothing_heavy():
    """``import mteb_stratified`` (and its core) pays for numpy and the evaluation code only."""
    heavy, _ = heavy_after("import mteb_stratified, mteb_stratified.core")
    assert heavy == []


def test_evaluating_a_run_loads_nothing_heavy():
    """Evaluation, its result objects and the file readers need no scipy subpackage."""
    heavy, out = heavy_after(textwrap.dedent("""
        import mteb_stratified
        res = mteb_stratified.evaluate({"q": {"a": 1}, "r": {"b": 2}},
                                       {"q": {"a": 0.5, "b": 0.5}, "r": {"a": 1.0, "b": 0.0}},
                                       ["RR@10", "nDCG@10", "AP@100"])
        res.to_dict(per_query=True); res.table()
        print(res["RR@10"].expected, res["RR@10"].min, res["RR@10"].max)
    """))
    assert heavy == [] and out == "0.625 0.5 0.75"  # q: tied first (0.75, 0.5, 1); r: 0.5


def test_lazy_names_load_on_use():
    """The stratification names import without scipy; scipy.stats and scipy.sparse come in
    when a function that needs them runs, and the numbers are right."""
    heavy, out = heavy_after(textwrap.dedent("""
        import sys
        from mteb_stratified.core import (ClusterWeights, Estimate, StratifiedDesign,
                                          stratified_estimates, stratify)
        print(sorted(m for m in ("scipy.stats", "scipy.sparse") if m in sys.modules))
        ci = Estimate("pooled", 0.5, 0.1, df=9).confidence_interval()
        print(round(ci.low, 10), round(ci.high, 10))
        s = stratify({"q1": {"a": 1}, "q2": {"b": 1}}, {"a": {0: 1.0}, "b": {1: 1.0}})
        print(type(s.membership).__module__.split(".")[:2], s.primary.tolist())
    """))
    t975 = 2.2621571628  # Student t quantile, 9 degrees of freedom
    ci = f"{round(0.5 - 0.1 * t975, 10)} {round(0.5 + 0.1 * t975, 10)}"
    assert out.splitlines() == ["[]", ci, "['scipy', 'sparse'] [0, 1]"]
    assert {"scipy.stats", "scipy.sparse"} <= set(heavy)


def test_import_loads_no_numpy():
    """The packages' ``__init__`` are lazy: importing them (and the light modules the command
    line parses with) loads no numpy; the first public name that needs it loads it."""
    _, out = heavy_after(textwrap.dedent("""
        import sys
        import mteb_stratified, mteb_stratified.core, mteb_stratified.io
        import mteb_stratified.core.errors, mteb_stratified.core.options
        import mteb_stratified.io.numbers, mteb_stratified.io.outputs
        print("numpy" in sys.modules)
        mteb_stratified.evaluate
        print("numpy" in sys.modules)
    """))
    assert out.splitlines() == ["False", "True"]


def test_submodules_resolve_as_attributes():
    """``mteb_stratified.core.ranking.arrays`` and the like work after ``import mteb_stratified``
    alone, as when the ``__init__`` files imported them eagerly; unknown names stay
    AttributeErrors."""
    _, out = heavy_after(textwrap.dedent("""
        import mteb_stratified as ms
        print(ms.api.evaluate is ms.evaluate, ms.core.ranking.arrays.__name__, ms.io.files.__name__,
              ms.core.ranking.evaluate.__name__)
        for package in (ms, ms.core, ms.io):
            try:
                package.no_such_name
            except AttributeError:
                print("AttributeError")
    """))
    assert out.splitlines() == ["True mteb_stratified.core.ranking.arrays mteb_stratified.io.files "
                                "mteb_stratified.core.ranking.evaluate", *["AttributeError"] * 3]


@pytest.mark.parametrize("package", [mteb_stratified, core, io_package])
def test_each_public_name_imports_in_a_fresh_interpreter(package):
    """``from PACKAGE import NAME`` works for every ``__all__`` name as the first thing a
    program does (the lazy ``__getattr__`` resolves it), and gives the defining module's
    object."""
    _, out = heavy_after(textwrap.dedent(f"""
        import importlib
        package = importlib.import_module({package.__name__!r})
        for name in package.__all__:
            exec(f"from {package.__name__} import {{name}} as value")
            module = package._LAZY.get(name)
            if module is not None:
                defining = importlib.import_module(f"{package.__name__}.{{module}}")
                assert value is getattr(defining, name), name
        print(len(package.__all__))
    """))
    assert out.splitlines()[-1] == str(len(package.__all__))


@pytest.mark.parametrize("package", [mteb_stratified, core, io_package])
def test_every_public_name_resolves(package):
    """Every ``__all__`` name (lazy ones included) is an attribute, listed by ``dir``, and
    star-importable; an unknown name is an AttributeError."""
    for name in package.__all__:
        assert getattr(package, name) is not None, name
    assert set(package.__all__) <= set(dir(package))
    namespace: dict = {}
    exec(f"from {package.__name__} import *", namespace)
    assert set(package.__all__) <= set(namespace)
    with pytest.raises(AttributeError, match="no_such_name"):
        package.no_such_name
