"""``mteb-stratified generate`` against a REAL OpenAI-compatible server running a real model.

``transformers serve`` runs the packaged SmolLM2-135M-Instruct on 127.0.0.1 (see
tests/structure/_smollm.py); the fault-injecting proxy of the extraction tests sits between the
client and the server and counts the requests that reach the server (the "paid" calls).  The
model is tiny, so few of its queries pass verification: these tests prove the loop, the
bookkeeping, the cache/resume and the fault handling, not query quality.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

pytest.importorskip("openai")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from structure import _smollm  # noqa: E402  (tests/ is on sys.path: rootdir-relative packages)
from structure._proxy import GARBAGE, FaultProxy  # noqa: E402

pytestmark = [pytest.mark.llm, pytest.mark.slow]

TIMEOUT = 900  # seconds per request: a loaded 2-core machine is slow
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUTPUTS = ("queries.jsonl", "candidates.jsonl", "qrels/test.tsv", "qrels/generated.tsv",
           "qrels/dev.tsv")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with _smollm.running_server(str(tmp_path_factory.mktemp("serve"))) as running:
        yield running


def _cmd(slice_paths, url, model, out, budget=8, *extra):
    folder, structure = slice_paths
    return [sys.executable, "-m", "mteb_stratified", "generate", "--dataset", folder,
            "--structure", structure, "--budget", str(budget), "--out", str(out),
            "--base-url", url, "--model", model, "--api-key", "none", "--timeout",
            str(TIMEOUT), "--n-seeds", "1", "--max-pool", "2", "--pool-bm25", "1",
            "--pool-dense", "1", "--seed", "7", "--no-progress", "--json", *extra]


def _env():
    return dict(os.environ, HF_HUB_OFFLINE="1",
                PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))


def _run(cmd):
    done = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True,
                          timeout=30 * TIMEOUT)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def _rows(path) -> int:
    if not os.path.exists(path):
        return 0
    try:
        with sqlite3.connect(path, timeout=30) as db:
            return db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _files(out):
    return {name: open(os.path.join(out, name), "rb").read() for name in OUTPUTS}


def test_generate_through_faults_then_rerun_from_the_cache(server, slice_paths, tmp_path):
    url, model = server
    out = tmp_path / "out"
    with FaultProxy(url) as proxy:
        proxy.faults.extend(["429", "cut", "500", "malformed_body"])
        code, stdout, stderr = _run(_cmd(slice_paths, proxy.url, model, out))
        assert code == 0, stderr[-3000:]
        assert proxy.applied == ["429", "cut", "500", "malformed_body"]
        summary = json.loads(stdout.strip().splitlines()[-1])
        usage = summary["usage"]
        assert usage["calls"] == usage["paid_calls"] <= 8 and usage["retries"] >= 4
        # every request sent counts (the 4 faulted ones too) and reached the proxy once
        assert proxy.received == usage["paid_calls"]
        counts = summary["counts"]
        assert counts["generated"] == counts["accepted"] + counts["rejected"] >= 1
        first = _files(out)
        # the same command again: every call comes from the cache, the output is the same
        code, stdout, stderr = _run(_cmd(slice_paths, proxy.url, model, out))
        assert code == 0, stderr[-3000:]
        again = json.loads(stdout.strip().splitlines()[-1])
        assert proxy.received == usage["paid_calls"]
        assert again["usage"]["paid_calls"] == 0 and again["usage"]["cached_calls"] == \
            usage["calls"]
    assert _files(out) == first
    cov = json.load(open(out / "coverage.json"))
    assert cov["after"]["n_queries"] == cov["before"]["n_queries"] + counts["accepted"]
    rows = [json.loads(x) for x in open(out / "queries.jsonl")]
    assert sum(r["origin"] == "generated" for r in rows) == counts["accepted"]
    for cand in map(json.loads, open(out / "candidates.jsonl")):
        assert cand["status"] in ("accepted", "rejected") and cand["seed"] == 7


def test_sigkill_mid_run_then_resume_equals_an_uninterrupted_run(server, slice_paths, tmp_path):
    """B runs four candidates at a time (``--concurrency 4``; a budget of 16 lets a round hold
    two: 16 // 8 requests at most per candidate), is killed mid-run and resumed; A runs one at
    a time, uninterrupted.  Same files, and the server saw B's lost requests at most once more
    each: those in flight at the kill (at most the concurrency)."""
    url, model = server
    concurrency, budget = 4, 16
    with FaultProxy(url) as proxy:
        # A: uninterrupted, one candidate at a time
        code, _, stderr = _run(_cmd(slice_paths, proxy.url, model, tmp_path / "a", budget))
        assert code == 0, stderr[-3000:]
        calls_a = proxy.upstream
        rows_a = _rows(str(tmp_path / "a" / "generate_cache.sqlite"))
        # B: killed once 3 answers are cached, then resumed with the same command
        cmd = _cmd(slice_paths, proxy.url, model, tmp_path / "b", budget, "--concurrency",
                   str(concurrency))
        cache_b = str(tmp_path / "b" / "generate_cache.sqlite")
        first = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10 * TIMEOUT
        while _rows(cache_b) < 3 and time.monotonic() < deadline:
            assert first.poll() is None, first.stderr.read().decode()[-3000:]
            time.sleep(0.05)
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        at_kill = _rows(cache_b)
        before_resume = proxy.upstream
        code, stdout, stderr = _run(cmd)
        assert code == 0, stderr[-3000:]
        resumed = json.loads(stdout.strip().splitlines()[-1])["usage"]
        resume_requests = proxy.upstream - before_resume
    assert 3 <= at_kill < rows_a
    assert _files(tmp_path / "b") == _files(tmp_path / "a")
    assert _rows(cache_b) == rows_a
    # the resumed run sent only the calls not finished before the kill
    assert resume_requests == resumed["paid_calls"] == rows_a - at_kill
    assert resumed["cached_calls"] == at_kill
    # in all, B asked the server at most once more than A per request in flight at the kill
    assert calls_a <= proxy.upstream - calls_a <= calls_a + concurrency


def test_a_model_that_returns_no_json_stops_with_a_clear_error(slice_paths, tmp_path):
    with FaultProxy(None) as proxy:
        proxy.synthetic = GARBAGE
        code, _, stderr = _run(_cmd(slice_paths, proxy.url, "any-model", tmp_path / "o", 20))
    assert code == 2
    assert "no JSON query in 3 answers in a row" in stderr and "fix:" in stderr
    assert "Traceback" not in stderr
