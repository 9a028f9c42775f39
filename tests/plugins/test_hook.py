"""The auto-load hook module itself (no wheel): lazy, registers on `import mteb`, never breaks it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PLUGINS = REPO / "plugins"


def _py(code, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith("MTEB_STRATIFIED")}
    e.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", **env)
    e["PYTHONPATH"] = os.pathsep.join([str(PLUGINS), str(REPO)])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env=e, cwd=str(REPO))


def test_pth_file_imports_only_the_hook():
    assert (PLUGINS / "mteb_stratified_autoload.pth").read_text().strip() == "import _mteb_stratified_autoload"
    proc = _py("import sys, _mteb_stratified_autoload; "
               "print(sorted(m for m in ('mteb', 'torch', 'numpy', 'mteb_stratified') if m in sys.modules))")
    assert proc.stdout.strip() == "[]", proc.stderr


def test_find_spec_alone_does_not_disarm_and_python_m_mteb_works():
    """runpy (`python -m mteb`) calls find_spec('mteb') before importing it: stay armed."""
    pytest.importorskip("mteb")
    proc = _py("import sys, runpy, _mteb_stratified_autoload; "
               "sys.argv = ['mteb', 'available-tasks', '-t', 'StratifiedNFCorpus']; "
               "runpy.run_module('mteb', run_name='__main__', alter_sys=True)")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "StratifiedNFCorpus" in proc.stdout


def test_finder_removes_itself_after_mteb_import():
    pytest.importorskip("mteb")
    proc = _py("import sys, _mteb_stratified_autoload as h; import mteb; "
               "print(any(isinstance(f, h._MtebFinder) for f in sys.meta_path), "
               "'StratifiedNFCorpus' in sys.modules['mteb.get_tasks']._TASKS_REGISTRY)")
    assert proc.stdout.split() == ["False", "True"], proc.stderr[-3000:]


def test_registration_failure_warns_but_mteb_imports(tmp_path):
    pytest.importorskip("mteb")
    broken = tmp_path / "mteb_stratified" / "adapters" / "mteb"
    broken.mkdir(parents=True)
    for d in (tmp_path / "mteb_stratified", tmp_path / "mteb_stratified" / "adapters", broken):
        (d / "__init__.py").write_text("")
    (broken / "registration.py").write_text("def try_register():\n    raise RuntimeError('boom')\n")
    e = {k: v for k, v in os.environ.items() if not k.startswith("MTEB_STRATIFIED")}
    e["PYTHONPATH"] = os.pathsep.join([str(PLUGINS), str(tmp_path)])
    proc = subprocess.run([sys.executable, "-W", "always", "-c",
                           "import _mteb_stratified_autoload, mteb; print(mteb.__name__)"],
                          capture_output=True, text=True, timeout=300, env=e, cwd=str(tmp_path))
    assert proc.returncode == 0 and proc.stdout.strip() == "mteb", proc.stderr[-2000:]
    assert "could not register" in proc.stderr and "boom" in proc.stderr


def test_switch_off():
    proc = _py("import sys, _mteb_stratified_autoload as h; "
               "print(any(isinstance(f, h._MtebFinder) for f in sys.meta_path))",
               MTEB_STRATIFIED_NO_AUTOLOAD="1")
    assert proc.stdout.strip() == "False"
