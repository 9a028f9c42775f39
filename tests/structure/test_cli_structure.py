"""``mteb-stratified structure``: build, rerun (reuse), resume, and clear errors (exit 2)."""

from __future__ import annotations

import json
import os

import pytest

from mteb_stratified.cli import main as cli_main


@pytest.fixture(autouse=True)
def _wired(monkeypatch):
    if "structure" not in cli_main.SUBCOMMANDS:
        monkeypatch.setattr(cli_main, "SUBCOMMANDS", tuple(cli_main.SUBCOMMANDS) + ("structure",))


def _beir(folder, corpus):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "corpus.jsonl"), "w") as fh:
        for doc_id in sorted(corpus):
            fh.write(json.dumps({"_id": doc_id, **corpus[doc_id]}) + "\n")
    return str(folder)


def _judged(folder, docs, splits=("dev", "test")):
    """Queries (document titles) judging 2 documents each, split alternately into dev/test."""
    os.makedirs(os.path.join(folder, "qrels"), exist_ok=True)
    rows = {s: [] for s in splits}
    with open(os.path.join(folder, "queries.jsonl"), "w") as fh:
        for i, d in enumerate(sorted(docs)):
            qid = f"q{i}"
            fh.write(json.dumps({"_id": qid, "text": docs[d]["title"] or "vitamin"}) + "\n")
            other = sorted(docs)[(i + 1) % len(docs)]
            rows[splits[i % len(splits)]] += [f"{qid}\t{d}\t2", f"{qid}\t{other}\t1"]
    for s, lines in rows.items():
        with open(os.path.join(folder, "qrels", f"{s}.tsv"), "w") as fh:
            fh.write("query-id\tcorpus-id\tscore\n" + "\n".join(lines) + "\n")
    return {s: len(r) // 2 for s, r in rows.items()}


@pytest.mark.slow
def test_build_then_rerun_reuses(tmp_path, small_corpus, capsys, monkeypatch):
    from mteb_stratified.structure import pipeline

    docs = {d: small_corpus[d] for d in sorted(small_corpus)[:30]}
    folder = _beir(tmp_path / "beir", docs)
    n_queries = _judged(folder, docs)
    out = str(tmp_path / "art")
    args = ["structure", "--corpus", folder, "--out", out, "--no-progress",
            "--max-doc-share", "0.3", "--json"]
    real_build = pipeline.build_structure

    def chatty_build(*a, **k):  # a library printing to stdout while the build runs (Ray does)
        print("chatter from a library")
        return real_build(*a, **k)

    monkeypatch.setattr(pipeline, "build_structure", chatty_build)
    assert cli_main.main(args) == 0
    captured = capsys.readouterr()
    # stdout is the result alone: one line of JSON; the chatter went to stderr
    assert "chatter from a library" in captured.err and "chatter" not in captured.out
    first = json.loads(captured.out)
    monkeypatch.setattr(pipeline, "build_structure", real_build)
    assert first["n_docs"] == 30 and first["clusters"] >= 1 and not first["reused"]
    assert os.path.exists(os.path.join(out, "metadata.json"))
    assert not os.path.exists(os.path.join(out, ".work"))
    # the Δ/J cut-points come from the held-out reference split (dev), stored in metadata.json
    bins = first["bins"]
    assert bins["reference"]["splits"] == ["dev"] and "dev" in bins["source"]
    assert bins["reference"]["n_queries"] + bins["reference"]["excluded"] == n_queries["dev"]
    with open(os.path.join(out, "metadata.json")) as fh:
        assert json.load(fh)["bins"] == bins
    from mteb_stratified.stratification import corpus_bins
    from mteb_stratified.structure import StructureArtifact
    stored = corpus_bins(StructureArtifact.load(out))
    assert list(stored.dispersion) == bins["dispersion"]
    assert list(stored.alignment) == bins["alignment"]
    assert cli_main.main(args) == 0
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert again["reused"] and again["bins"] == bins
    # another reference split: the artifact is reused, only the bins change
    assert cli_main.main(args + ["--bins-splits", "dev,test"]) == 0
    both = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert both["reused"] and both["bins"]["reference"]["splits"] == ["dev", "test"]
    assert cli_main.main(args + ["--bins-splits", "train"]) == 2
    assert "--bins-splits" in capsys.readouterr().err
    assert cli_main.main(args[:-1]) == 0  # human-readable summary
    text = capsys.readouterr().out
    assert "clusters" in text and "largest clusters" in text and "Δ/J bins" in text


@pytest.mark.parametrize("corpus,message", [({}, "empty"),
                                            ({"a": {"title": "", "text": ""}}, "no text")])
def test_bad_corpus_exits_2(tmp_path, capsys, corpus, message):
    folder = _beir(tmp_path / "beir", corpus)
    assert cli_main.main(["structure", "--corpus", folder, "--out", str(tmp_path / "o"),
                          "--no-progress"]) == 2
    assert message in capsys.readouterr().err


def test_unknown_corpus_exits_2(tmp_path, capsys):
    assert cli_main.main(["structure", "--corpus", "no-such-corpus", "--out",
                          str(tmp_path / "o")]) == 2
    assert "neither a folder nor a bundled dataset" in capsys.readouterr().err


def test_llm_without_key_exits_2_and_says_how(tmp_path, capsys, monkeypatch):
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    folder = _beir(tmp_path / "beir", {"a": {"title": "t", "text": "Vitamin D."}})
    assert cli_main.main(["structure", "--corpus", folder, "--out", str(tmp_path / "o"),
                          "--extractor", "llm", "--model", "m"]) == 2
    err = capsys.readouterr().err
    assert "OPENAI_API_KEY" in err and "--extractor offline" in err


def test_unreachable_endpoint_exits_2(tmp_path, capsys):
    pytest.importorskip("openai")
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    folder = _beir(tmp_path / "beir", {"a": {"title": "t", "text": "Vitamin D."}})
    assert cli_main.main(["structure", "--corpus", folder, "--out", str(tmp_path / "o"),
                          "--extractor", "llm", "--model", "m", "--api-key", "x",
                          "--base-url", f"http://127.0.0.1:{port}/v1", "--max-retries", "1",
                          "--timeout", "2", "--no-progress"]) == 2
    assert "kept failing" in capsys.readouterr().err


def test_bins_never_come_from_the_evaluated_split(tmp_path, small_corpus, capsys):
    docs = {d: small_corpus[d] for d in sorted(small_corpus)[:10]}
    folder = _beir(tmp_path / "beir", docs)
    _judged(folder, docs, splits=("test",))
    out = str(tmp_path / "art")
    args = ["structure", "--corpus", folder, "--out", out, "--no-progress"]
    # refused before anything is built, naming the three ways out
    assert cli_main.main(args) == 2
    err = capsys.readouterr().err
    assert "only judged split" in err and "test" in err
    assert "--bins-splits dev" in err and "--cut-points" in err and "--bins-splits none" in err
    assert not os.path.exists(os.path.join(out, "metadata.json"))
    for bad in ("0.5", "a,b:c", "0.9,0.1:0.2,0.3"):
        assert cli_main.main(args + ["--cut-points", bad]) == 2
        assert "--cut-points" in capsys.readouterr().err


def test_an_older_artifact_format_says_how_to_rebuild(tmp_path):
    from mteb_stratified.core import InputError
    from mteb_stratified.structure import StructureArtifact

    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "metadata.json").write_text(json.dumps({"format": "mteb-stratified/structure/1"}))
    with pytest.raises(InputError) as err:
        StructureArtifact.load(str(folder))
    text = str(err.value)
    assert "older format" in text and "mteb-stratified structure --corpus" in text
    assert "metadata.json" in text


@pytest.mark.slow
def test_the_bins_are_a_step_before_the_one_save(tmp_path, small_corpus, capsys, monkeypatch):
    """metadata.json is written once per build, bins included; a rerun with the same settings
    writes nothing; a rerun asking for other bins writes the new artifact once and says so."""
    import mteb_stratified.structure.artifact as artifact_module

    written = []
    real = artifact_module.atomic_write

    def counting(path, *a, **kw):
        if os.path.basename(path) == "metadata.json":
            written.append(path)
        return real(path, *a, **kw)
    monkeypatch.setattr(artifact_module, "atomic_write", counting)
    docs = {d: small_corpus[d] for d in sorted(small_corpus)[:30]}
    folder = _beir(tmp_path / "beir", docs)
    _judged(folder, docs)
    out = str(tmp_path / "art")
    meta = os.path.join(out, "metadata.json")
    args = ["structure", "--corpus", folder, "--out", out, "--no-progress",
            "--max-doc-share", "0.3", "--consensus-runs", "1", "--json"]
    assert cli_main.main(args) == 0
    first = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert written == [meta] and json.load(open(meta))["bins"] == first["bins"]
    assert first["bins"]["reference"]["splits"] == ["dev"]
    stamp = os.stat(meta).st_mtime_ns, os.stat(meta).st_ino
    assert cli_main.main(args) == 0  # reused: nothing written
    captured = capsys.readouterr()
    assert json.loads(captured.out.strip().splitlines()[-1])["reused"]
    assert written == [meta] and (os.stat(meta).st_mtime_ns, os.stat(meta).st_ino) == stamp
    assert "written again" not in captured.err
    assert cli_main.main(args + ["--bins-splits", "dev,test"]) == 0
    captured = capsys.readouterr()
    both = json.loads(captured.out.strip().splitlines()[-1])
    assert both["reused"] and written == [meta, meta]
    assert json.load(open(meta))["bins"] == both["bins"] != first["bins"]
    assert "Δ/J bins differ from these settings, so it is written again" in captured.err


def test_repeated_cut_points_warn_of_an_empty_bin(tmp_path, small_corpus, capsys):
    """Cut-points (0, 0) leave the Med bin empty by construction: said, not silent (#33)."""
    docs = {d: small_corpus[d] for d in sorted(small_corpus)[:10]}
    folder = _beir(tmp_path / "beir", docs)
    _judged(folder, docs, splits=("test",))
    out = str(tmp_path / "art")
    assert cli_main.main(["structure", "--corpus", folder, "--out", out, "--no-progress",
                          "--cut-points", "0,0:0.25,0.5"]) == 0
    err = capsys.readouterr().err
    assert "dispersion cut-points (0.0, 0.0) repeat a value" in err and "Med dispersion" in err
    assert "alignment cut-points" not in err


def test_only_a_ray_this_command_started_is_shut_down(monkeypatch, capsys):
    """structure's stdout guard (cli/structure.py ``_result_stdout``): stdout goes to stderr
    inside it; a Ray that came up inside it is shut down on the way out, one already running
    is left alone, and a failing shutdown is a warning that hides neither the result nor the
    build's own error."""
    import sys
    import types

    from mteb_stratified.cli import structure as command

    state = {"up": False, "shutdowns": 0}

    def shutdown():
        state.update(up=False, shutdowns=state["shutdowns"] + 1)

    fake = types.SimpleNamespace(is_initialized=lambda: state["up"], shutdown=shutdown)
    monkeypatch.setitem(sys.modules, "ray", fake)
    with command._result_stdout(True):
        state["up"] = True  # the command starts Ray
        print("raylet chatter")
    assert state == {"up": False, "shutdowns": 1}
    state["up"] = True  # running before the command: left alone
    with command._result_stdout(True):
        pass
    assert state == {"up": True, "shutdowns": 1}
    state["up"] = False
    with command._result_stdout(False):  # the local engine: Ray is not the command's
        state["up"] = True
    assert state == {"up": True, "shutdowns": 1}

    def broken():
        raise RuntimeError("the GCS is gone")

    fake.shutdown, state["up"] = broken, False
    with pytest.raises(KeyError, match="the build's own error"):
        with command._result_stdout(True):
            state["up"] = True
            raise KeyError("the build's own error")
    out = capsys.readouterr()
    assert "raylet chatter" in out.err and "chatter" not in out.out
    assert "Ray did not shut down cleanly (RuntimeError: the GCS is gone)" in out.err
