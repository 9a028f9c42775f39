"""Layering: the numeric core imports nothing heavier than numpy/scipy."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BLOCKED = ["torch", "mteb", "igraph", "transformers", "sentence_transformers", "pandas",
           "sklearn", "pytrec_eval", "trm"]


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
    (``to_dataframe`` imports pandas lazily, inside the method)."""
    core = REPO / "mteb_stratified" / "core"
    for path in core.glob("*.py"):
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            if stripped.startswith(("import ", "from ")) and not line.startswith((" ", "\t")):
                mod = stripped.split()[1].split(".")[0]
                assert mod not in BLOCKED, f"{path.name}: {line}"
