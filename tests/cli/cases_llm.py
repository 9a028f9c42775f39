"""An API key that cannot be sent in an HTTP header (#46.13f, #46.13g): ``structure
--extractor llm`` refuses it before any request, naming ``--api-key`` (the key itself is never
quoted). It used to say "malformed response body" for a key with ``é`` and "no answer from the
server" for one with a line break, though nothing had been sent. (The same key from
``$OPENAI_API_KEY``, the 64 MiB answers of #46.8 and the re-ask bound need a local server: they
are in tests/llm/test_faults.py.)"""

from __future__ import annotations

import json

from bad_inputs import Case, Error

_CORPUS = {"corpus/": "", "corpus/corpus.jsonl": "".join(
    json.dumps({"_id": i, "title": "t", "text": f"Vitamin D and {i}."}) + "\n" for i in "ab")}


def _structure(key: str) -> tuple:
    """``structure`` with the LLM extractor and ``key``, at a port where nothing listens."""
    return ("structure", "--corpus", "{corpus/}", "--out", "{o}", "--extractor", "llm",
            "--model", "m", "--api-key", key, "--base-url", "http://127.0.0.1:9/v1",
            "--max-retries", "0", "--timeout", "2", "--no-progress")


def cases() -> list[Case]:
    return [
        Case("llm-api-key-e-acute", "#46.13f: a key with 'é' said 'malformed response body'",
             _CORPUS, _structure("sk-caf\u00e9-0123456789"),
             Error("--api-key", None, r"'é' \(U\+00E9\).*HTTP header.*nothing was sent")),
        Case("llm-api-key-newline", "#46.13g: a key with a line break said 'no answer from the "
             "server', though nothing was sent", _CORPUS, _structure("sk-0123456789\n"),
             Error("--api-key", None, r"a line break \(\\n\) at its end.*nothing was sent")),
    ]
