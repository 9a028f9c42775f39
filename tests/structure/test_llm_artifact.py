"""``structure --extractor llm``: a reused artifact keeps the user's extractor (key, cache), an
extraction that fails for every document is a clear error, and --retry-failed asks again."""

from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from mteb_stratified.cli import main as cli_main  # noqa: E402
from tests.generation._chat import ChatServer  # noqa: E402

from .test_cli_structure import _beir, _judged  # noqa: E402

pytest.importorskip("openai")


@pytest.fixture()
def beir(tmp_path, small_corpus, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL"):
        monkeypatch.delenv(name, raising=False)
    docs = {d: small_corpus[d] for d in sorted(small_corpus)[:30]}
    folder = _beir(tmp_path / "beir", docs)
    _judged(folder, docs)
    return folder


def _args(folder, out, url, *extra):
    return ["structure", "--corpus", folder, "--out", out, "--no-progress", "--extractor", "llm",
            "--base-url", url, "--model", "m", "--api-key", "mine", "--max-doc-share", "0.5",
            "--min-cluster-size", "2", "--consensus-runs", "1", "--json", *extra]


@pytest.mark.slow
def test_a_reused_llm_artifact_keeps_the_users_extractor(beir, tmp_path, capsys):
    out = str(tmp_path / "art")
    with ChatServer(words=True) as server:
        assert cli_main.main(_args(beir, out, server.url)) == 0, capsys.readouterr().err
        capsys.readouterr()
        # killed in the final phase: the artifact is saved, its bins are not yet
        meta_path = os.path.join(out, "metadata.json")
        meta = json.load(open(meta_path))
        bins = meta.pop("bins")
        json.dump(meta, open(meta_path, "w"))
        sent = server.count
        assert cli_main.main(_args(beir, out, server.url)) == 0, capsys.readouterr().err
        summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        # reused, the dev queries' entities came from the user's extractor and its cache
        assert summary["reused"] and summary["bins"]["reference"] == bins["reference"]
        assert server.count == sent and summary["llm_usage"]["cached"] >= 1


@pytest.mark.slow
def test_every_answer_failing_is_a_clear_error_then_retry_failed(beir, tmp_path, capsys):
    out = str(tmp_path / "art")
    with ChatServer(garbage=True) as bad:
        assert cli_main.main(_args(beir, out, bad.url)) == 2
    err = capsys.readouterr().err
    assert "failed for all 30 documents" in err and "extraction.jsonl" in err
    assert "--retry-failed" in err and "--model" in err and "Traceback" not in err
    with ChatServer(words=True) as good:
        # without --retry-failed the cached failures stay failures
        assert cli_main.main(_args(beir, out, good.url)) == 2
        assert good.count == 0
        capsys.readouterr()
        # (no reference bins: no query is sent, every request is a document's)
        assert cli_main.main(_args(beir, out, good.url, "--retry-failed", "--bins-splits",
                                   "none")) == 0
        captured = capsys.readouterr()
        assert ("30 documents to ask (0 never answered; 30 failed before, asked again "
                "(--retry-failed)): 30 first requests") in captured.err
        summary = json.loads(captured.out.strip().splitlines()[-1])
        assert summary["extraction_failures"] == 0 and summary["clusters"] >= 1
        assert summary["llm_plan"]["first_requests"] == 30
        assert good.count == 30 + summary["llm_usage"]["reasks"]  # what it said, and re-asks
