"""Coverage-aware generation on NFCorpus with a real local LLM, at ``--concurrency 1`` and at
``--concurrency N`` side by side on the same budget: requests per minute of each (counted at the
server), then byte-identity of their outputs when the answers come from the cache.

With no ``--base-url`` it starts the packaged SmolLM2-135M-Instruct under ``transformers serve``
itself (tests/structure/_smollm.py: the server the tests use); or give a running
OpenAI-compatible server::

    python benchmarks/generate_nfcorpus.py --budget 40 --out /tmp/gen-nf
    python benchmarks/generate_nfcorpus.py --base-url http://127.0.0.1:8765/v1 \\
        --model "$MODEL" --budget 150 --out /tmp/gen-nf

Every request passes a counting proxy (tests/structure/_proxy.py ``FaultProxy``, no faults)
whose count of requests forwarded to the server is the figure reported.  Steps, each a fresh
``mteb-stratified generate --dataset nfcorpus --structure bundled`` process with its own --out
folder and cache:

1. ``c1``: ``--concurrency 1``; ``cN``: ``--concurrency N`` (same budget, seed and options);
   requests per minute = requests at the server / (the run's last answer − its first request),
   and over the whole run (start-up included); the ratio cN / c1;
2. both again, every answer from their caches (the server must see no request): their files
   are compared byte for byte — ``queries.jsonl``, ``candidates.jsonl``, ``qrels/*.tsv``,
   ``coverage.json`` (whole: a rerun from the cache has no timing field, and its usage counts
   the cached calls alike at any concurrency), ``coverage.md``;
3. ``cN`` from a copy of c1's cache (``--cache``): the same answers at concurrency N must give
   c1's files byte for byte.  (Step 2 compares two live runs' answers: a server whose answers
   depend on what else it runs, e.g. with continuous batching, may answer c1 and cN apart.)

Exit status 1 when a comparison fails.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from _harness import ROOT, tests_helper

_smollm = tests_helper("structure/_smollm.py")  # the tests' server and counting proxy
FaultProxy = tests_helper("structure/_proxy.py").FaultProxy

OUTPUTS = ("queries.jsonl", "candidates.jsonl", "qrels/test.tsv", "qrels/generated.tsv",
           "coverage.json", "coverage.md")


class _Clock:
    """Times of the first and the latest change of ``proxy.upstream`` (polled every 50 ms)."""

    def __init__(self, proxy) -> None:
        self.proxy, self.first, self.stop = proxy, None, threading.Event()
        self.start_count = proxy.upstream
        self.thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self.stop.wait(0.05):
            if self.first is None and self.proxy.upstream > self.start_count:
                self.first = time.perf_counter()

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()


def _generate(args, url: str, out: str, concurrency: int, cache: str | None = None) -> list:
    cmd = [sys.executable, "-m", "mteb_stratified", "generate", "--dataset", "nfcorpus",
           "--structure", "bundled", "--budget", str(args.budget), "--seed", str(args.seed),
           "--base-url", url, "--model", args.model, "--api-key", "none", "--out", out,
           "--timeout", str(args.timeout), "--max-pool", str(args.max_pool), "--pool-bm25",
           str(args.pool_bm25), "--pool-dense", str(args.pool_dense), "--judge-batch",
           str(args.judge_batch), "--concurrency", str(concurrency), "--no-progress", "--json"]
    return cmd + (["--cache", cache] if cache else [])


def _share_embeddings(src: str, dst: str) -> None:
    """Copy the corpus embeddings the first run's pooler cached into another run's --out (the
    cache file's name is its content key, so the pooler takes it as its own)."""
    work = os.path.join(src, ".work")
    if src != dst and os.path.isdir(work):
        shutil.copytree(work, os.path.join(dst, ".work"), dirs_exist_ok=True)


def _run(cmd, proxy) -> dict:
    """Run one generate process; its usage, requests at the server and times."""
    env = dict(os.environ, HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    t0 = time.perf_counter()
    with _Clock(proxy) as clock:
        done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True)
    end = time.perf_counter()
    if done.returncode:
        sys.stderr.write(done.stderr.decode()[-4000:])
        raise SystemExit(f"generate failed ({done.returncode}): {' '.join(cmd)}")
    usage = json.loads(done.stdout.decode().strip().splitlines()[-1])["usage"]
    requests = proxy.upstream - clock.start_count
    llm_s = end - clock.first if clock.first is not None else 0.0
    return {"usage": usage, "requests": requests, "wall_s": end - t0, "llm_s": llm_s,
            "rpm": 60 * requests / llm_s if llm_s else 0.0,
            "rpm_wall": 60 * requests / (end - t0)}


def _files(out: str) -> dict:
    return {name: open(os.path.join(out, name), "rb").read() for name in OUTPUTS}


def _compare(a: str, b: str, what: str) -> bool:
    fa, fb = _files(a), _files(b)
    differ = [n for n in OUTPUTS if fa[n] != fb[n]]
    if differ and "coverage.json" in differ:
        ja, jb = json.loads(fa["coverage.json"]), json.loads(fb["coverage.json"])
        keys = sorted(k for k in set(ja) | set(jb) if ja.get(k) != jb.get(k))
        differ[differ.index("coverage.json")] = f"coverage.json (keys {keys})"
    print(f"  {what}: " + ("byte-identical (" + ", ".join(OUTPUTS) + ")" if not differ
                           else "DIFFER: " + ", ".join(differ)))
    return not differ


@contextlib.contextmanager
def _server(args):
    """``(base URL without /v1, model)``: the given server, or a started ``transformers serve``."""
    if args.base_url:
        url = args.base_url.rstrip("/")
        yield url[:-3] if url.endswith("/v1") else url, args.model
        return
    with tempfile.TemporaryDirectory() as logs, _smollm.running_server(logs) as running:
        yield running


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base-url", default=None,
                    help="a running OpenAI-compatible server (default: start transformers "
                         "serve with the packaged SmolLM2-135M-Instruct)")
    ap.add_argument("--model", default=None, help="its model (default: the packaged one)")
    ap.add_argument("--budget", type=int, default=40, help="LLM calls per run (default: 40)")
    ap.add_argument("--concurrency", type=int, default=4,
                    help="compared with 1 (default: 4)")
    ap.add_argument("--seed", type=int, default=0, help="(default: 0)")
    ap.add_argument("--max-pool", type=int, default=4,
                    help="documents judged per query (default: 4; with --judge-batch 8 a "
                         "candidate takes 10 calls at most, so a budget of 40 lets a round "
                         "draft 4 candidates)")
    ap.add_argument("--pool-bm25", type=int, default=2, help="(default: 2)")
    ap.add_argument("--pool-dense", type=int, default=0,
                    help="dense candidates per query (default: 0: dense pooling embeds the "
                         "corpus first, about 10 min for NFCorpus on 2 cores; the runs after "
                         "the first reuse its embeddings)")
    ap.add_argument("--judge-batch", type=int, default=8, help="(default: 8)")
    ap.add_argument("--timeout", type=float, default=900, help="per request (default: 900)")
    ap.add_argument("--out", default="gen-nfcorpus", help="root of the runs' folders "
                                                          "(default: gen-nfcorpus)")
    args = ap.parse_args()
    if args.base_url and not args.model:
        ap.error("--model is needed with --base-url")
    n = args.concurrency
    runs = {f"c{c}": os.path.join(args.out, f"c{c}") for c in (1, n)}
    for path in [*runs.values(), os.path.join(args.out, f"c{n}-from-c1")]:
        shutil.rmtree(path, ignore_errors=True)
    ok = True
    with _server(args) as (upstream, model), FaultProxy(upstream) as proxy:
        args.model = args.model or model
        url = proxy.url
        live = {}
        for name, c in (("c1", 1), (f"c{n}", n)):
            _share_embeddings(runs["c1"], runs[name])
            live[name] = _run(_generate(args, url, runs[name], c), proxy)
            r, u = live[name], live[name]["usage"]
            print(f"{name}: {r['requests']} requests at the server ({u['calls']} calls of "
                  f"{args.budget}, {u['retries']} retries) in {r['llm_s']:.0f} s from the "
                  f"first request = {r['rpm']:.1f} requests/min ({r['rpm_wall']:.1f}/min over "
                  f"the whole run of {r['wall_s']:.0f} s)", flush=True)
        ratio = live[f"c{n}"]["rpm"] / live["c1"]["rpm"] if live["c1"]["rpm"] else 0.0
        print(f"requests per minute, concurrency {n} / concurrency 1: {ratio:.2f}")
        print("from the caches:")
        for name, c in (("c1", 1), (f"c{n}", n)):
            again = _run(_generate(args, url, runs[name], c), proxy)
            sent = again["requests"]
            print(f"  {name} rerun: {sent} requests at the server, "
                  f"{again['usage']['cached_calls']} calls from its cache")
            ok &= sent == 0
        ok &= _compare(runs["c1"], runs[f"c{n}"], f"c1 and c{n} (each from its own cache)")
        cross = os.path.join(args.out, f"c{n}-from-c1")
        os.makedirs(cross)
        _share_embeddings(runs["c1"], cross)
        shutil.copy(os.path.join(runs["c1"], "generate_cache.sqlite"),
                    os.path.join(cross, "c1_cache.sqlite"))
        again = _run(_generate(args, url, cross, n, os.path.join(cross, "c1_cache.sqlite")),
                     proxy)
        ok &= again["requests"] == 0
        ok &= _compare(runs["c1"], cross, f"c1 and c{n} from c1's cache "
                                          f"({again['requests']} requests)")
    print(open(os.path.join(runs["c1"], "coverage.md")).read())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
