"""Every script in ``benchmarks/`` is smoke-tested (issue 45): its ``--help`` runs, and where a
run takes seconds, a tiny real run does too, so a script that rots fails CI.

Each script runs as users run it: ``python benchmarks/X.py`` in a fresh process, from the
repository root, with this tree on ``PYTHONPATH``.  The tiny runs use real data: the bundled
NFCorpus (a 20-query slice of its test split, the full corpus) and two real BM25 runs over it
(bm25s at its defaults and at Anserini's k1 = 0.9, b = 0.4).  A script that only gets
``--help`` is listed in :data:`HELP_ONLY` with the reason; a new script must be added to one
of the two lists (:func:`test_every_script_has_a_tiny_run_or_a_reason`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The scripts (``_harness.py``, the shared module they import, is not one).
SCRIPTS = sorted(p.name for p in (ROOT / "benchmarks").glob("*.py")
                 if not p.name.startswith("_"))

#: The scripts with a tiny real run below (a test named ``test_<stem>_...``).
TINY_RUNS = {
    "bench_metrics.py", "bench_stratify.py", "bench_structure.py", "gpu_hps.py",
    "gpu_precision.py", "knn_methods.py", "leiden_node_order.py", "reader_memory.py",
    "reliability.py", "strata_power.py", "strata_validity.py", "topic_map.py",
    "gap_variation.py", "bench_leiden.py",
}
#: The scripts that get only ``--help``, and why.
HELP_ONLY = {
    "before_after.py": "exports a git revision and builds its C walk, then runs a benchmark "
                       "twice per repetition: tens of seconds at the least",
    "bench_hps.py": "real models in bf16 on the CPU: 25 s with one model and 4 documents",
    "bench_mteb_overhead.py": "mteb and MiniLM, two evaluations: 35 s on 5 queries and 50 "
                              "documents",
    "bench_structure_driver.py": "spaCy extraction of a synthetic corpus: minutes",
    "bench_structure_ray.py": "a local Ray cluster with spaCy and model actors: minutes",
    "docs_screenshot.py": "mkdocs build and headless Chromium (the docs build is checked by "
                          ".ci/run and tests/test_docs.py)",
    "embed_precision.py": "a real model in three precisions: 26 s for 16 documents",
    "gate_nfcorpus.py": "starts a SmolLM2 server and runs generate three times: minutes",
    "generate_nfcorpus.py": "starts a SmolLM2 server and runs generate four times: minutes",
    "generate_offline.py": "a whole offline generate run: minutes",
    "generated_order.py": "needs two generate outputs (minutes) and MiniLM over the corpus",
    "mteb_full_nfcorpus.py": "a full mteb run of MiniLM: minutes on the CPU",
    "nfcorpus_runs.py": "MiniLM over the whole corpus: about 9 minutes on 2 cores",
    "nfcorpus_strata.py": "needs the per-query CSV of a full StratifiedNFCorpus MiniLM run",
    "quantized_search.py": "five processes, each importing sentence-transformers and torch "
                           "for its job: 43 s at 3,000 documents and 20 queries",
    "report_nfcorpus.py": "an mteb run of MiniLM and Chromium screenshots: minutes",
    "same_output.py": "exports a git revision and needs an mteb output folder of six runs",
    "structure_corpus.py": "a part of bench_structure.py --corpus: cold structure builds, "
                           "minutes",
    "structure_seeds.py": "a structure build per seed: minutes",
    "structure_time.py": "a cold structure build: minutes",
}


def _run(*args, timeout=240, env=None) -> subprocess.CompletedProcess:
    """``python *args`` from the repository root with this tree first on ``PYTHONPATH``, on
    one OpenMP thread (faiss' and torch's threads spin against each other on a busy machine:
    knn_methods' tiny run took 20 s on two shared cores, 1 s on one thread)."""
    full = dict(os.environ, OMP_NUM_THREADS="1", **(env or {}))
    full["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), full.get("PYTHONPATH")) if p)
    return subprocess.run([sys.executable, *map(str, args)], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=timeout)


def _ok(proc: subprocess.CompletedProcess) -> str:
    """The output of a run that must have succeeded (else its output, to read why)."""
    assert proc.returncode == 0, f"exit {proc.returncode}\n{proc.stdout[-3000:]}\n" \
                                 f"{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    return proc.stdout


def _body(text: str, script: str) -> str:
    """A run's output after its first line, which must be its command (``_harness``)."""
    first, _, rest = text.partition("\n")
    assert first.startswith(f"# command: python benchmarks/{script}"), first
    return rest


def test_every_script_has_a_tiny_run_or_a_reason():
    assert len(SCRIPTS) >= 29 and "strata_validity.py" in SCRIPTS
    assert not TINY_RUNS & HELP_ONLY.keys()
    new = sorted(set(SCRIPTS) - TINY_RUNS - HELP_ONLY.keys())
    assert not new, (f"{new}: give each a tiny real run in this file, or add it to HELP_ONLY "
                     f"with the reason")
    gone = sorted((TINY_RUNS | HELP_ONLY.keys()) - set(SCRIPTS))
    assert not gone, f"{gone} are no longer in benchmarks/: take them out of the lists"
    tests = [name for name in globals() if name.startswith("test_")]
    for script in TINY_RUNS:
        stem = script[:-3]
        assert any(name.startswith(f"test_{stem}_") for name in tests), script


@pytest.mark.parametrize("script", SCRIPTS)
def test_help(script):
    out = _ok(_run(f"benchmarks/{script}", "--help", timeout=120))
    assert out.startswith(f"usage: {script}"), out[:500]


# --- real data: a slice of NFCorpus test and two BM25 runs over it ----------------------------

N_QUERIES = 20


@pytest.fixture(scope="module")
def nfcorpus_slice(tmp_path_factory):
    """``(folder, run_a, run_b)``: a BEIR folder with the bundled NFCorpus corpus and queries
    and the qrels of the first 20 test queries (sorted ids) with 2 or 3 relevant documents
    (few relevant documents keep the soft J's entity embedding to seconds), and two BM25 runs
    of those queries, depth 100."""
    from mteb_stratified.adapters.bm25 import bm25_run
    from mteb_stratified.io import bundled_path, load_beir, write_run

    src = Path(bundled_path("nfcorpus"))
    data = load_beir(str(src), "test")
    qids = sorted(q for q, judged in data.qrels.items()
                  if 2 <= sum(g >= 1 for g in judged.values()) <= 3)[:N_QUERIES]
    assert len(qids) == N_QUERIES
    folder = tmp_path_factory.mktemp("nfcorpus-slice")
    (folder / "qrels").mkdir()
    for name in ("corpus.jsonl.gz", "queries.jsonl.gz"):
        shutil.copyfile(src / name, folder / name)
    lines = [f"{q}\t{d}\t{g}" for q in qids for d, g in sorted(data.qrels[q].items())]
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n"
                                               + "\n".join(lines) + "\n")
    queries = {q: data.queries[q] for q in qids}
    runs = []
    for tag, k1, b in (("bm25", 1.5, 0.75), ("bm25-anserini", 0.9, 0.4)):
        run, _ = bm25_run(data.corpus, queries, depth=100, k1=k1, b=b)
        path = folder / f"{tag}.trec"
        write_run(run, str(path), tag=tag)
        runs.append(path)
    return folder, runs[0], runs[1]


@pytest.mark.slow  # the packaged MiniLM embeds entity names (the soft J)
def test_strata_validity_tiny_run(nfcorpus_slice, tmp_path):
    folder, a, b = nfcorpus_slice
    out = tmp_path / "validity.json"
    text = _ok(_run("benchmarks/strata_validity.py", "--data", folder, "--split", "test",
                    "--run", f"A={a}", "--run", f"B={b}", "--min-queries", "5",
                    "--resamples", "50", "--bootstrap", "2", "--json", out))
    head = f"# strata validity: {folder} test, {N_QUERIES} queries"
    assert _body(text, "strata_validity.py").startswith(head)
    fig = json.loads(out.read_text())
    assert fig["n_queries"] == N_QUERIES and fig["grain"]["n_strata"] >= 2
    assert set(fig["chance"]) == {"A", "B", "A − B"}
    assert 0 <= fig["chance"]["A − B"]["max_z_p"] <= 1
    assert set(fig["alignment_vs_lexical"]) == {"names", "concepts"}
    assert 0 < fig["coverage"]["msc"] <= fig["coverage"]["ceiling_msc"] <= 1
    assert -1 <= fig["quality"]["npmi_weighted"] <= 1


def test_strata_validity_refuses_other_than_two_runs(nfcorpus_slice):
    folder, a, b = nfcorpus_slice
    proc = _run("benchmarks/strata_validity.py", "--data", folder, "--split", "test",
                "--run", f"A={a}", "--run", f"B={b}", "--run", f"C={a}")
    assert proc.returncode == 2 and "give exactly two --run" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def test_strata_power_tiny_run(nfcorpus_slice, tmp_path):
    folder, a, b = nfcorpus_slice
    out = tmp_path / "power.json"
    text = _ok(_run("benchmarks/strata_power.py", "--data", folder, "--split", "test",
                    "--run", f"A={a}", "--run", f"B={b}", "--min-queries", "5",
                    "--draws", "5", "--grid-draws", "5", "--split-half-draws", "5",
                    "--resamples", "19", "--json", out))
    head = f"# strata power: {folder} test, {N_QUERIES} queries"
    assert _body(text, "strata_power.py").startswith(head)
    fig = json.loads(out.read_text())
    assert fig["runs"] == ["A", "B"] and fig["n_queries"] == N_QUERIES
    assert list(fig["grains"]) == ["5"]
    tests = fig["grains"]["5"]["tests"]
    assert tests["split_half"]["draws"] == 5 and fig["planting"] == "headroom"
    assert set(tests["paired_max_z"]) >= {"realised", "mde_realised"}


def test_gap_variation_tiny_run(nfcorpus_slice, tmp_path):
    folder, a, b = nfcorpus_slice
    out = tmp_path / "variation.json"
    text = _ok(_run("benchmarks/gap_variation.py", "--data", folder, "--split", "test",
                    "--run", f"A={a}", "--run", f"B={b}", "--min-queries", "5",
                    "--grains", "topics,strata", "--reps", "3", "--json", out))
    head = f"# gap variation: {folder} test, {N_QUERIES} queries"
    assert _body(text, "gap_variation.py").startswith(head)
    fig = json.loads(out.read_text())
    assert set(fig["grains"]) == {"topics", "strata"}
    assert [r["tau"] for r in fig["grains"]["topics"]["coverage"]] == [0.0, 0.05, 0.1]


@pytest.mark.slow  # (e): the strata block on the full NFCorpus test split
def test_bench_stratify_tiny_run():
    text = _ok(_run("benchmarks/bench_stratify.py", "--queries", "2000", "--clusters", "50",
                    "--docs", "5000", "--resamples", "50"))
    for step in ("(a) stratify", "(b) ", "(c) Rao–Wu bootstrap", "(d) coverage", "total",
                 "(e) strata block, NFCorpus test"):
        assert step in text, step


def test_bench_structure_tiny_run():
    text = _ok(_run("benchmarks/bench_structure.py", "--sizes", "2000"))
    line = next(ln for ln in text.splitlines() if ln.startswith("n=    2,000"))
    assert "clusters      40 (planted 40)" in line and "ARI 1.000" in line, line


def test_bench_leiden_tiny_run():
    text = _ok(_run("benchmarks/bench_leiden.py", "--sizes", "2000", "--kinds", "separated",
                    "--seeds", "2", "--iterations", "2000"))
    rows = {ln.split(" | ")[0].strip("| "): ln.split(" | ") for ln in text.splitlines()
            if ln.startswith("| ") and not ln.startswith("| method")
            and not ln.startswith("| backend")}
    for name in ("the project's step", "the project's one fit", "igraph community_leiden",
                 "leidenalg find_partition"):
        assert rows[name][5] == "1.000", (name, text)   # ARI to the 10 planted communities
    assert "seed ARI over 2 seeds, the project's step: 1.000" in text
    assert "| igraph | -1 |" in text and "| leidenalg | 2 |" in text


def test_knn_methods_tiny_run():
    # above knn_edges' exact_max of 1,000 the approximate methods run; synthetic data only
    text = _ok(_run("benchmarks/knn_methods.py", "--n", "1200", "--skip-real"))
    recalls = [float(ln.split("edge recall")[1].split()[0]) for ln in text.splitlines()
               if "edge recall" in ln]
    assert len(recalls) == 6 and min(recalls) >= 0.9, text


def test_leiden_node_order_tiny_run():
    text = _ok(_run("benchmarks/leiden_node_order.py", "1500"))
    assert _body(text, "leiden_node_order.py").startswith("n 1500: k-NN")
    assert "Leiden by batches of components" in text


def test_reader_memory_tiny_run():
    text = _ok(_run("benchmarks/reader_memory.py", "--lines", "20000", "--docs", "100"))
    for job in ("floor", "stream-read", "stream-evaluate", "dicts", "pytrec_eval"):
        assert f"\n{job} " in text, job


def test_topic_map_tiny_run():
    text = _ok(_run("benchmarks/topic_map.py", "--structure", "bundled", "--data", "nfcorpus",
                    "--seeds", "0"))
    assert _body(text, "topic_map.py").startswith("leaves: 97 in 31 topics")
    assert "coverage at the leaves, test (323 queries)" in text and "coherence" in text


def test_bench_metrics_tiny_run():
    # the file and start-up parts: the array part compares with ranx and ir_measures, which
    # only the [bench] extra installs
    text = _ok(_run("benchmarks/bench_metrics.py", "--parts", "files,start", "--sizes",
                    "100x10", "--file-sizes", "200x20", "--plain-size", "200x20",
                    "--repeats", "1", "--start-repeats", "1"))
    assert "[met] CLI nDCG@10 oblivious = plain pytrec_eval's within 1e-09 at 200x20" in text


def test_reliability_tiny_run():
    text = _ok(_run("benchmarks/reliability.py", "--no-faults"))
    counts = dict(ln.split()[:2] for ln in text.splitlines()
                  if ln.startswith("  ") and ln.split()[:1] in (["unclear"], ["traceback"],
                                                                ["wrong"]))
    assert counts == {"unclear": "0", "traceback": "0", "wrong": "0"}, text[:2000]


@pytest.mark.parametrize("script", ["gpu_hps.py", "gpu_precision.py"])
def test_gpu_hps_and_gpu_precision_without_cuda(script):
    """The GPU benchmarks' own path on a machine without CUDA: a clear skip line, exit 0."""
    text = _ok(_run(f"benchmarks/{script}", env={"CUDA_VISIBLE_DEVICES": ""}))
    assert text.startswith(f"{script[:-3]}: skipped: no CUDA device"), text


def _needs_cuda() -> None:
    """Skip (allowed: the tests are marked ``gpu``) without CUDA; torch is imported here, not
    when the module is collected."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")


@pytest.mark.gpu
def test_gpu_hps_tiny_run_on_a_gpu(tmp_path):
    _needs_cuda()
    out = tmp_path / "gpu_hps.json"
    text = _ok(_run("benchmarks/gpu_hps.py", "--warmup", "1", "--repeats", "3", "--json", out))
    assert "skipped" not in text and out.is_file()


@pytest.mark.gpu
def test_gpu_precision_tiny_run_on_a_gpu(tmp_path):
    _needs_cuda()
    out = tmp_path / "gpu_precision.json"
    text = _ok(_run("benchmarks/gpu_precision.py", "--max-queries", "2", "--regimes", "fp32",
                    "bf16", "--json", out, "--out", tmp_path / "sweep", timeout=600))
    assert "skipped" not in text and out.is_file()
