"""Shared test configuration: deterministic hypothesis profile, offline model hubs, and the rule
that **a test whose dependency is missing fails instead of skipping**.

Every skip (``pytest.skip``, ``pytest.importorskip``, ``skipif``), at collection or at run
time, is turned into a failure that names the missing piece, unless the test is marked
``gpu`` (it needs CUDA and there is none) or ``cpu_only`` (it checks the no-GPU path and a GPU
is present).  So a fresh machine that lacks a package, the local LLM server's dependencies or
chromium fails CI instead of passing with the real-model tests quietly left out.
``pytest --allow-skips`` restores plain skips for a partial local setup; ``.ci/run`` never
passes it.
"""

import os
import tempfile

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# the distilled static embeddings (structure/static_embed.py): one cache for every test run on
# this machine, never the user's own cache folder
os.environ.setdefault("MTEB_STRATIFIED_CACHE", os.path.join(
    tempfile.gettempdir(), f"mteb-stratified-tests-{os.getuid() if hasattr(os, 'getuid') else 0}"))
# the embedding cache (io/embedding_cache.py) is off unless a test points it at its own folder:
# a test that embeds (the Ray engine against the local one, say) must really embed
os.environ.setdefault("MTEB_STRATIFIED_EMBEDDING_CACHE", "off")

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

#: Markers whose tests may skip: they depend on hardware, not on an installable package.
SKIP_ALLOWED_MARKERS = ("gpu", "cpu_only")

_FIX = ("every test must run: install what it needs with `bash .ci/run` (or pip install "
        "'.[all,test,docs]' and the steps in .ci/run), or pass --allow-skips for a partial setup")


def pytest_addoption(parser):
    parser.addoption("--allow-skips", action="store_true", default=False,
                     help="let tests whose dependency is missing skip instead of failing "
                          "(partial local setups only; CI never passes it)")


def _skip_reason(longrepr) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _strict(config) -> bool:
    return not config.getoption("--allow-skips")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if not (rep.skipped and _strict(item.config)) or hasattr(rep, "wasxfail"):
        return
    if any(item.get_closest_marker(m) for m in SKIP_ALLOWED_MARKERS):
        return
    rep.outcome = "failed"
    rep.longrepr = f"SKIPPED is not allowed here: {_skip_reason(rep.longrepr)}\n  fix: {_FIX}"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and _strict(collector.config):
        rep.outcome = "failed"
        rep.longrepr = (f"module skipped at collection, which is not allowed here: "
                        f"{_skip_reason(rep.longrepr)}\n  fix: {_FIX}")


#: The test files that take longest (real LLM servers, Ray, a fresh venv, model loads), run
#: first: ``pytest -n auto --dist loadgroup`` hands whole groups to the workers in collection
#: order, so a long file started last would leave one worker running it alone at the end.
LONGEST_FIRST = (
    "tests/generation/test_generate_server.py",
    "tests/adapters/test_ray_engine.py",
    "tests/readme/test_readme.py",
    "tests/structure/test_llm_server.py",
    "tests/adapters/precision/test_user_model_task.py",
    "tests/generation/test_concurrency.py",
    "tests/adapters/precision/test_reranker.py",
    "tests/plugins/test_autoload_wheel.py",
    "tests/generation/test_offline.py",
    "tests/benchmarks/test_scripts.py",
)


#: The files that start a real ``transformers serve`` (SmolLM2 on the CPU): one worker runs
#: them one after the other, so two servers never decode at once on two cores.
REAL_SERVER_FILES = ("tests/generation/test_generate_server.py",
                     "tests/structure/test_llm_server.py")


def pytest_collection_modifyitems(config, items):
    """The longest files first (stable: every file's own order is kept), and each file one
    ``xdist_group`` (``pytest -n auto --dist loadgroup``: a worker runs a whole file, so its
    module fixtures load once), the real-server files one group together."""
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    root = str(config.rootpath)

    def path_of(item):
        return os.path.relpath(str(item.path), root).replace(os.sep, "/")

    items.sort(key=lambda item: rank.get(path_of(item), len(rank)))
    for item in items:
        path = path_of(item)
        item.add_marker(pytest.mark.xdist_group(
            "real-llm-server" if path in REAL_SERVER_FILES else path))
