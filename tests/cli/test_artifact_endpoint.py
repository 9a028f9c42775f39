"""A shared structure artifact never calls out: its recorded endpoint, key and cache path are
provenance only; the query entities of an LLM-built artifact come from the user's endpoint."""

from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from mteb_stratified.cli.main import main  # noqa: E402
from mteb_stratified.core.errors import InputError  # noqa: E402
from mteb_stratified.io import bundled_path, load_beir  # noqa: E402
from mteb_stratified.structure import (StructureArtifact, embedding_model_of,  # noqa: E402
                                       query_extractor)
from tests.generation._chat import ChatServer, llm_copy  # noqa: E402

pytest.importorskip("openai")


@pytest.fixture()
def env(monkeypatch, tmp_path):
    """The user's own key in the environment, no endpoint or model there, and the user's
    cache folder in tmp_path (never the real home cache)."""
    for name in ("OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "the-users-secret")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    return str(tmp_path / "xdg-cache" / "mteb-stratified" / "llm_cache.sqlite")


@pytest.fixture()
def theirs(tmp_path):
    """The host and cache path a foreign artifact names, and the artifact itself."""
    with ChatServer() as server:
        cache = str(tmp_path / "elsewhere" / "their_cache.sqlite")
        art = llm_copy(_bundled_structure(), str(tmp_path / "copied"), base_url=server.url,
                       cache_path=cache)
        yield server, art, cache


def _bundled_structure():
    from importlib import resources
    return str(resources.files("mteb_stratified") / "data" / "nfcorpus" / "structure")


def _results(folder):
    """A TaskResult and its per-query CSV for the first 30 bundled test queries."""
    qids = sorted(load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels)[:30]
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "StratifiedNFCorpus.json").write_text(json.dumps(
        {"task_name": "StratifiedNFCorpus", "dataset_revision": "x", "mteb_version": "2",
         "scores": {"test": [{"ndcg_at_10": 0.5, "main_score": 0.5, "hf_subset": "default"}]}}))
    rows = ["hf_subset,hf_split,qid,measure,expected,min,max,oblivious,range,bias"]
    rows += [f"default,test,{q},nDCG@10,0.5,0.5,0.5,0.5,0.0,0.0" for q in qids]
    csv = folder / "StratifiedNFCorpus_per_query.csv"
    csv.write_text("\n".join(rows) + "\n")
    return str(folder / "StratifiedNFCorpus.json"), str(csv)


def _common(art):
    # J over names: these tests are about the endpoint, and J over concepts (the default)
    # would embed every entity name of the relevant documents (about a minute each)
    return ["--structure", art, "--dataset", bundled_path("nfcorpus"), "--resamples", "20",
            "--alignment", "exact"]


def test_stratify_uses_the_users_endpoint_never_the_recorded_one(tmp_path, env, theirs, capsys):
    server, art, their_cache = theirs
    results, _ = _results(tmp_path / "run")
    with ChatServer() as mine:
        code = main(["stratify", results, *_common(art), "--base-url", mine.url,
                     "--model", "my-model"])
        err = capsys.readouterr().err
        assert code == 0, err
        assert mine.count > 0
    assert server.count == 0
    assert not os.path.exists(their_cache) and not os.path.exists(os.path.dirname(their_cache))
    # the default cache lies in the user's cache folder, never in the (shared) artifact; the
    # user is told that the query entities come from another extractor than the documents' ones
    assert os.path.exists(env) and not os.path.exists(os.path.join(art, "llm_cache.sqlite"))
    assert "different extractor" in err and "my-model" in err and "their-model" in err
    assert json.load(open(results))["strata"]["test"]["n_queries"] >= 1


def test_stratify_without_an_endpoint_says_which_options(tmp_path, env, theirs, capsys):
    server, art, their_cache = theirs
    results, _ = _results(tmp_path / "run")
    assert main(["stratify", results, *_common(art)]) == 2
    err = capsys.readouterr().err
    assert os.path.join(art, "metadata.json") in err
    assert "--base-url" in err and "--model" in err and "fix:" in err
    assert "Traceback" not in err
    assert server.count == 0 and not os.path.exists(their_cache)


@pytest.mark.parametrize("own_endpoint", [False, True])
def test_report_never_calls_the_recorded_endpoint(tmp_path, env, theirs, capsys, own_endpoint):
    pytest.importorskip("matplotlib")
    server, art, their_cache = theirs
    _, csv = _results(tmp_path / "run")
    argv = ["report", f"sys={csv}", *_common(art), "-o", str(tmp_path / "r.html")]
    with ChatServer() as mine:
        extra = ["--base-url", mine.url, "--model", "my-model"] if own_endpoint else []
        code = main(argv + extra)
        assert (mine.count > 0) == own_endpoint
    err = capsys.readouterr().err
    assert code == (0 if own_endpoint else 2), err
    assert server.count == 0 and not os.path.exists(their_cache)
    if not own_endpoint:
        assert "--base-url" in err and "metadata.json" in err


@pytest.mark.parametrize("value", ["/tmp/evil-spacy-model", "../model", "http://host/x",
                                   "~/model", ["a", "b"]])
def test_a_recorded_path_or_url_parameter_is_refused(tmp_path, value):
    art = llm_copy(_bundled_structure(), str(tmp_path / "copied"), base_url="http://x",
                   cache_path="/tmp/x")
    meta_path = os.path.join(art, "metadata.json")
    meta = json.load(open(meta_path))
    meta["extractor"].update(kind="offline", init_params={"model": value})
    json.dump(meta, open(meta_path, "w"))
    # refused when loaded (the built-in extractors' parameters are in the schema), else used
    with pytest.raises(InputError, match="could name a file or a server|never a path") as exc:
        StructureArtifact.load(art).extract_entities("vitamin d")
    assert exc.value.source == meta_path


def test_a_recorded_embedding_model_path_is_refused(tmp_path, monkeypatch):
    """A recorded folder is opened only when the user gives that folder themselves; a recorded
    name is never taken as a folder of the current folder."""
    art = llm_copy(_bundled_structure(), str(tmp_path / "copied"), base_url="http://x",
                   cache_path="/tmp/x")
    model_dir = tmp_path / "their-model"
    model_dir.mkdir()
    monkeypatch.chdir(tmp_path)  # ./their-model exists here
    meta_path = os.path.join(art, "metadata.json")
    meta = json.load(open(meta_path))
    for name, allowed, ok in ((str(model_dir), None, False), ("../up", "../other", False),
                              (str(model_dir), str(model_dir), True),
                              ("their-model", "their-model", False), (None, None, True),
                              ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2", True)):
        meta["parameters"]["embedding_model"] = name
        json.dump(meta, open(meta_path, "w"))
        loaded = StructureArtifact.load(art)  # a path is data: loading never opens it
        if ok:
            assert embedding_model_of(loaded, allowed) == name
        else:
            with pytest.raises(InputError, match="a path") as exc:
                embedding_model_of(loaded, allowed)
            assert exc.value.source == meta_path and "--embedding-model" in exc.value.fix


def test_a_pre_filled_cache_in_the_artifact_is_never_read(tmp_path, env, theirs, capsys):
    """An artifact may ship llm_cache.sqlite with answers that would decide the query entities
    without a call: the default cache is the user's (-o/--out here), so the server is asked
    and the artifact's folder is left as it was."""
    server, art, their_cache = theirs
    planted = os.path.join(art, "llm_cache.sqlite")
    with open(planted, "wb") as fh:
        fh.write(b"planted")  # not even a database: opening it would fail or "repair" it
    before = sorted(os.listdir(art))
    results, _ = _results(tmp_path / "run")
    out = tmp_path / "stratified"
    with ChatServer() as mine:
        code = main(["stratify", results, *_common(art), "-o", str(out), "--base-url", mine.url,
                     "--model", "my-model"])
        err = capsys.readouterr().err
        assert code == 0, err
        assert mine.count > 0  # the entities came from the user's endpoint
    assert os.path.exists(out / "llm_cache.sqlite") and not os.path.exists(env)
    assert sorted(os.listdir(art)) == before and open(planted, "rb").read() == b"planted"


def test_the_user_cache_folder_follows_xdg_cache_home(monkeypatch, tmp_path):
    from mteb_stratified.cli._strata_args import user_cache_dir
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c"))
    assert user_cache_dir() == str(tmp_path / "c" / "mteb-stratified")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG rule: absolute only
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert user_cache_dir() == str(tmp_path / "home" / ".cache" / "mteb-stratified")


def _recording(art: str, model: str) -> str:
    meta_path = os.path.join(art, "metadata.json")
    meta = json.load(open(meta_path))
    meta["parameters"]["embedding_model"] = model
    json.dump(meta, open(meta_path, "w"))
    return meta_path


@pytest.fixture()
def loads(monkeypatch):
    """The names the sentence-transformers loader is asked for (nothing is loaded)."""
    import mteb_stratified.structure.embed as embed
    asked = []

    def load(name=None, *args, **kwargs):
        asked.append(name)
        raise InputError("stopped at the load (test)", fix="-")
    monkeypatch.setattr(embed, "load_sentence_model", load)
    return asked


@pytest.mark.parametrize("command", ["stratify", "generate"])
def test_a_recorded_embedding_model_needs_the_users_consent(tmp_path, env, capsys, loads,
                                                            command):
    """An artifact recording another model than the packaged one: exit 2 naming it, nothing
    loaded; with --embedding-model NAME the load is attempted with that name."""
    art = llm_copy(_bundled_structure(), str(tmp_path / "copied"), base_url="http://x",
                   cache_path="/tmp/x")
    meta = json.load(open(os.path.join(art, "metadata.json")))
    meta["extractor"] = {"kind": "offline", "init_params": {}}  # no endpoint needed
    json.dump(meta, open(os.path.join(art, "metadata.json"), "w"))
    meta_path = _recording(art, "someone/their-model")
    if command == "stratify":
        results, _ = _results(tmp_path / "run")
        argv = ["stratify", results, *_common(art), "--alignment", "soft"]
    else:
        argv = ["generate", "--dataset", "nfcorpus", "--structure", art, "--budget", "5",
                "--out", str(tmp_path / "o"), "--model", "m", "--api-key", "none",
                "--base-url", "http://127.0.0.1:9/v1", "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{meta_path}: metadata.json records the embedding model 'someone/their-model'" in err
    assert "--embedding-model someone/their-model" in err and "Traceback" not in err
    assert loads == []
    assert main([*argv, "--embedding-model", "someone/their-model"]) == 2
    assert "stopped at the load (test)" in capsys.readouterr().err
    assert loads[-1] == "someone/their-model"


def test_recorded_request_sizes_are_bounded(tmp_path, env):
    """The recorded max_tokens/max_chars of an LLM-built artifact are taken up to the
    documented bounds, and the user's own settings win."""
    from mteb_stratified.structure.artifact import REQUEST_BOUNDS
    art = llm_copy(_bundled_structure(), str(tmp_path / "copied"), base_url="http://x",
                   cache_path="/tmp/x")
    meta_path = os.path.join(art, "metadata.json")
    meta = json.load(open(meta_path))
    meta["extractor"]["params"].update(max_tokens=10**9, max_chars=10**12)
    json.dump(meta, open(meta_path, "w"))
    settings = {"model": "my-model", "api_key": "k", "base_url": "http://127.0.0.1:9/v1"}
    loaded = StructureArtifact.load(art)
    ex = query_extractor(loaded, settings)
    assert ex.endpoint.max_tokens == REQUEST_BOUNDS["max_tokens"] == 4096
    assert ex.max_chars == REQUEST_BOUNDS["max_chars"] == 20000
    meta["extractor"]["params"].update(max_tokens=300, max_chars=900)
    json.dump(meta, open(meta_path, "w"))
    small = StructureArtifact.load(art)
    assert (query_extractor(small, settings).endpoint.max_tokens,
            query_extractor(small, settings).max_chars) == (300, 900)
    own = StructureArtifact.load(art)
    assert query_extractor(own, {**settings, "max_tokens": 64}).endpoint.max_tokens == 64


def test_a_provider_is_not_taken_for_an_api_key(tmp_path, monkeypatch):
    """With no key anywhere, a provider object (generate's metered one) is enough to build the
    query extractor, and it is passed as the provider, not as the key."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    art = llm_copy(_bundled_structure(), str(tmp_path / "copied"), base_url="http://x",
                   cache_path="/tmp/x")

    class Provider:
        def complete(self, **request):
            raise AssertionError("not called")
    provider = Provider()
    loaded = StructureArtifact.load(art)
    ex = query_extractor(loaded, {"model": "my-model", "provider": provider})
    assert ex.endpoint.provider is provider and ex.endpoint.api_key is None
    bare = StructureArtifact.load(art)
    with pytest.raises(InputError, match="LLM endpoint of your own"):
        query_extractor(bare, {"model": "my-model"})
