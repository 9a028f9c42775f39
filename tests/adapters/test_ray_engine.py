"""The Ray engine (``structure --engine ray``) against the single-machine path, on a local Ray
cluster (``ray.init(num_cpus=2)``, no network): the same artifact byte for byte, a worker
killed mid-run changes nothing, and bad input gets clear errors."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

ray = pytest.importorskip("ray")  # the [ray] extra (conftest: a missing one fails)
psutil = pytest.importorskip("psutil")

from mteb_stratified.core.errors import InputError  # noqa: E402

N_DOCS = 120
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def files_of(folder):
    return {name: open(os.path.join(folder, name), "rb").read()
            for name in sorted(os.listdir(folder)) if not name.startswith(".")}


@pytest.fixture(scope="module")
def corpus():
    from mteb_stratified.io import bundled_path, load_beir
    data = load_beir(bundled_path("nfcorpus"), "test")
    return {d: data.corpus[d] for d in sorted(data.corpus)[:N_DOCS]}


@pytest.fixture(scope="module")
def config():
    from mteb_stratified.structure.pipeline import StructureConfig
    # chunks of 8 documents: 15 units of extraction work, so a worker can be killed mid-run;
    # bare names embedded (one embedding pass) and one Leiden run keep the builds short; the
    # model itself embeds (on the workers: the static lookup runs in the driver, no engine)
    return StructureConfig(chunk_size=8, consensus_runs=1, entity_context="name",
                           entity_embedding="model", document_embedding="model")


@pytest.fixture(scope="module")
def local(tmp_path_factory, corpus, config):
    from mteb_stratified.structure.pipeline import build_structure
    out = str(tmp_path_factory.mktemp("local") / "art")
    build_structure(corpus, config, out=out)
    return out


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, configure_logging=False)
    yield
    ray.shutdown()


def _engine(**kw):
    from mteb_stratified.adapters.ray_engine import RayEngine
    return RayEngine(progress=False, **kw)


def test_a_ray_build_is_byte_identical_to_the_single_machine_build(cluster, corpus, config,
                                                                   local, tmp_path):
    from mteb_stratified.structure.pipeline import BuildReport, build_structure
    engine = _engine(workers=2)
    report = BuildReport()
    build_structure(corpus, config, out=str(tmp_path / "ray"), engine=engine, report=report)
    assert files_of(tmp_path / "ray") == files_of(local)
    summary = engine.summary()
    assert summary["steps"]["extract"]["items"] == N_DOCS == report.extracted_docs
    assert summary["steps"]["extract"]["workers"] == 2 and summary["cpus"] == 2
    assert summary["steps"]["embed"]["items"] > 0


@pytest.mark.parametrize("precision", ["int8", "bf16"])
def test_int8_and_bf16_embeddings_on_ray_are_the_single_machine_bits(cluster, corpus, precision):
    """The int8 model and the bfloat16 pass (``--document-embedding int8 / bf16``) on two Ray
    workers: the same batches, so the same bits as in this process; and int8 on GPUs is
    refused before any actor starts."""
    from mteb_stratified.structure.embed import INT8_BATCH
    from mteb_stratified.structure.engine import LocalEngine
    texts = [corpus[d]["text"] for d in sorted(corpus)][:40]
    engine = _engine(workers=2)
    ray_emb = engine.embed(texts, None, INT8_BATCH, precision=precision)
    local = LocalEngine().embed(texts, None, INT8_BATCH, precision=precision)
    assert np.array_equal(ray_emb, local)
    assert not np.array_equal(local, LocalEngine().embed(texts, None, INT8_BATCH))
    assert engine.summary()["steps"]["embed"]["workers"] == 2
    if precision == "int8":
        engine.embed_device = "cuda"  # what --embed-device cuda sets (this cluster has no GPU)
        with pytest.raises(InputError, match="CPUs only"):
            engine.embed(texts, None, INT8_BATCH, precision=precision)


def _worker_pids(marker: str) -> list[int]:
    pids = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        cmd = " ".join(proc.info["cmdline"] or [])
        if marker in cmd and proc.info["pid"] != os.getpid():
            pids.append(proc.info["pid"])
    return pids


def test_a_worker_killed_mid_run_changes_nothing(cluster, corpus, config, local, tmp_path):
    """SIGKILL one extraction actor once the first chunk's rows are checkpointed: Ray restarts
    it and retries its task; no document is lost or repeated, the artifact is the same.  Then
    a driver crash: the rerun resumes from the checkpoint."""
    from mteb_stratified.structure.pipeline import BuildReport, build_structure
    out = str(tmp_path / "killed")
    ckpt = os.path.join(out, ".work", "extraction.jsonl")
    engine, report, errors = _engine(workers=2), BuildReport(), []

    def build():
        try:
            build_structure(corpus, config, out=out, engine=engine, report=report,
                            keep_work=True)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=build)
    thread.start()
    killed, rows_at_kill = [], None
    deadline = time.monotonic() + 600
    while thread.is_alive() and not killed and time.monotonic() < deadline:
        rows = sum(1 for _ in open(ckpt)) if os.path.exists(ckpt) else 0
        pids = _worker_pids("_ExtractWorker")
        if rows >= config.chunk_size and pids:
            rows_at_kill = rows
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
        time.sleep(0.01)
    thread.join(900)
    assert not errors, errors
    assert killed, "no extraction worker was found to kill"
    assert config.chunk_size <= rows_at_kill < N_DOCS, "the kill came after the extraction"
    assert not psutil.pid_exists(killed[0]) or \
        psutil.Process(killed[0]).status() == psutil.STATUS_ZOMBIE
    lines = open(ckpt).read().splitlines()
    assert len(lines) == N_DOCS  # every document once: none lost, none repeated
    assert report.extracted_docs == N_DOCS
    assert files_of(out) == files_of(local)

    # then the driver "crashes" mid-write: the rows it checkpointed are not extracted again
    with open(ckpt, "w") as fh:
        fh.write("\n".join(lines[:50]) + "\n" + lines[50][:20])
    os.remove(os.path.join(out, "metadata.json"))
    engine, report = _engine(), BuildReport()
    build_structure(corpus, config, out=out, engine=engine, report=report)
    assert report.resumed_docs == 50 and report.extracted_docs == N_DOCS - 50
    assert engine.summary()["steps"]["extract"]["items"] == N_DOCS - 50
    assert files_of(out) == files_of(local)


def test_a_worker_that_cannot_load_the_model_names_its_node(cluster, corpus, config, tmp_path):
    import dataclasses

    from mteb_stratified.structure.pipeline import build_structure
    missing = str(tmp_path / "no-such-model")
    cfg = dataclasses.replace(config, embedding_model=missing)
    with pytest.raises(InputError) as err:
        build_structure(corpus, cfg, out=str(tmp_path / "bad"), engine=_engine(workers=1))
    text = str(err.value)
    assert "could not load the embedding model" in text and missing in text
    assert f"on node {ray.util.get_node_ip_address()} (Ray node " in text
    assert "every node" in err.value.fix


def test_a_worker_with_another_extractor_version_is_refused(cluster, corpus, config, tmp_path):
    """A node whose spaCy model differs would give other entities: its worker refuses."""
    from mteb_stratified.adapters import ray_engine
    from mteb_stratified.structure.extractors import SpacyNounChunkExtractor

    class Drifted(SpacyNounChunkExtractor):
        def params(self):  # what the driver's node reports
            return dict(super().params(), model_version="0.0-driver")

    engine = _engine(workers=1)
    chunks = [sorted(corpus)[:8]]
    texts = {d: corpus[d]["text"] for d in chunks[0]}
    with pytest.raises(InputError) as err:
        list(engine.extract(chunks, texts, Drifted(), config))
    assert "loads another extractor than the driver" in str(err.value)
    assert "0.0-driver" in str(err.value)
    assert ray_engine.WORKER_TAG not in str(err.value)


# -- the command line -------------------------------------------------------------------------

def _cli(*args, env=None, timeout=900):
    done = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "structure", "_cli.py"),
                           "structure", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def folder(tmp_path_factory, corpus):
    import json
    path = tmp_path_factory.mktemp("beir") / "slice"
    path.mkdir()
    with open(path / "corpus.jsonl", "w") as fh:
        for d in sorted(corpus):
            fh.write(json.dumps({"_id": d, **corpus[d]}) + "\n")
    return str(path)


def test_the_cli_builds_with_engine_ray_the_same_artifact(folder, corpus, tmp_path):
    """``structure --engine ray`` (a local Ray the command starts) and the single-machine
    path with the command's settings."""
    from mteb_stratified.structure.pipeline import StructureConfig, build_structure
    build_structure(corpus, StructureConfig(consensus_runs=1, entity_context="name"),
                    out=str(tmp_path / "local"), name="slice")
    code, out, err = _cli("--corpus", folder, "--consensus-runs", "1", "--entity-context",
                          "name", "--no-progress", "--json", "-o", str(tmp_path / "ray"),
                          "--engine", "ray", "--workers", "2")
    assert code == 0, err[-3000:]
    import json
    summary = json.loads(out)
    assert summary["engine"]["engine"] == "ray" and summary["engine"]["workers"] == 2
    assert summary["engine"]["steps"]["extract"]["items"] == N_DOCS
    assert files_of(tmp_path / "ray") == files_of(tmp_path / "local")


def test_no_ray_cluster_at_the_address_is_a_clear_error(folder, tmp_path):
    address = f"127.0.0.1:{_free_port()}"
    t0 = time.monotonic()
    code, out, err = _cli("--corpus", folder, "-o", str(tmp_path / "o"), "--engine", "ray",
                          "--address", address)
    assert code == 2 and "Traceback" not in err
    assert f"no Ray cluster answers at --address {address}" in err
    assert "ray start --head" in err
    assert time.monotonic() - t0 < 120


def test_ray_client_addresses_are_refused_before_anything_loads(folder, tmp_path):
    """Ray Client cannot carry Ray Data's streaming actor calls (ray-project/ray#43357)."""
    code, out, err = _cli("--corpus", folder, "-o", str(tmp_path / "o"), "--engine", "ray",
                          "--address", "ray://127.0.0.1:10001")
    assert code == 2 and "Traceback" not in err
    assert "Ray Client cannot run Ray Data pipelines" in err and "--address auto" in err
    assert not os.path.exists(tmp_path / "o" / ".work")


def test_more_workers_than_the_cluster_has_cpus_is_refused(cluster):
    with pytest.raises(InputError) as err:
        _engine(workers=3)
    assert "the Ray cluster has 2 CPUs" in str(err.value) and "--workers 2" in err.value.fix


def test_an_endpoint_unreachable_from_the_workers_stops_with_its_error(cluster, config,
                                                                      tmp_path):
    from mteb_stratified.core.errors import EndpointError
    from mteb_stratified.structure.llm import LLMExtractor
    ex = LLMExtractor(base_url=f"http://127.0.0.1:{_free_port()}/v1", model="m",
                      api_key="none", cache_path=str(tmp_path / "c.sqlite"), max_retries=1,
                      backoff=0.01, timeout=2)
    texts = {"a": "Vitamin D and bone.", "b": "Iron and anaemia."}
    with pytest.raises(EndpointError) as err:
        list(_engine(workers=1).extract([["a", "b"]], texts, ex, config))
    assert "(from the Ray worker on node " in str(err.value)
    assert err.value.check  # how to check the server, as on one machine


def test_ray_options_without_the_ray_engine_are_refused(folder, tmp_path):
    code, out, err = _cli("--corpus", folder, "-o", str(tmp_path / "o"), "--workers", "2")
    assert code == 2 and "--workers only apply with --engine ray" in err
    assert "Traceback" not in err


def test_int8_documents_on_gpu_workers_are_refused_before_any_work(folder, tmp_path):
    code, out, err = _cli("--corpus", folder, "-o", str(tmp_path / "o"), "--engine", "ray",
                          "--embed-device", "cuda", "--document-embedding", "int8")
    assert code == 2 and "--document-embedding int8 runs on CPUs only" in err
    assert "Traceback" not in err and not (tmp_path / "o" / ".work").exists()


def test_ray_missing_names_the_extra(monkeypatch, capsys, folder, tmp_path):
    from mteb_stratified._optional import install_hint
    from mteb_stratified.cli.main import main
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails, as if missing
    assert main(["structure", "--corpus", folder, "-o", str(tmp_path / "o"),
                 "--engine", "ray"]) == 2
    err = capsys.readouterr().err
    assert install_hint("ray") in err and "Traceback" not in err


def test_llm_extraction_on_ray_pays_for_each_answer_once(cluster, config, tmp_path):
    """The driver's answer cache is the one source of truth: cached documents never reach a
    worker, each missing answer is asked once (faults retried inside the worker), stored by the
    driver, and a rerun, or the single-machine path on that cache, asks for nothing."""
    from mteb_stratified.structure.engine import LocalEngine
    from mteb_stratified.structure.llm import LLMExtractor
    from tests.structure._proxy import FaultProxy

    texts = {f"d{i:02d}": f"Document {i} is about vitamin D and bone {i}." for i in range(20)}
    chunks = [sorted(texts)[s:s + config.chunk_size] for s in range(0, 20, config.chunk_size)]
    cache = str(tmp_path / "cache.sqlite")

    def extractor(url):
        return LLMExtractor(base_url=url, model="m", api_key="none", cache_path=cache,
                            backoff=0.01, concurrency=2)

    def rows_of(engine, ex):
        return sorted((r for batch in engine.extract(chunks, texts, ex, config) for r in batch),
                      key=lambda r: r["doc_id"])

    with FaultProxy(None) as proxy:
        proxy.synthetic = '{"entities": [{"name": "Vitamin D", "description": "a nutrient"}]}'
        ex = extractor(proxy.url)
        ex.extract([texts[d] for d in sorted(texts)[:5]])  # 5 answers cached beforehand
        assert proxy.received == 5
        proxy.faults.extend(["429", "500"])
        engine = _engine(workers=2)
        rows = rows_of(engine, ex)
        assert [r["doc_id"] for r in rows] == sorted(texts)
        assert proxy.received == 5 + 15 + 2  # the 15 missing answers, the 2 faults retried
        usage = ex.usage()
        assert usage["requests"] == 22 and usage["retries"] == 2 and usage["cached"] == 5
        assert ex.cache.count() == 20
        # a rerun on Ray, and the single-machine path on the same cache: no request
        assert rows_of(_engine(workers=2), extractor(proxy.url)) == rows
        assert rows_of(LocalEngine(), extractor(proxy.url)) == rows
        assert proxy.received == 22
