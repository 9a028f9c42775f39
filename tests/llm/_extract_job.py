"""A real extraction job, run in a subprocess by the SIGKILL test of ``test_faults.py``.

``python _extract_job.py URL CACHE OUT DOCS.json``: :func:`run` on the documents of
``DOCS.json`` (a list of strings), the entities written to ``OUT`` as JSON once all are done.
The working tree's package is put first on ``sys.path``, as in ``tests/structure/_cli.py``.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

from mteb_stratified.structure.llm import LLMExtractor  # noqa: E402


def run(url: str, cache: str, texts: list) -> list:
    """Entities of ``texts`` (``[[name, description], ...]`` each) from :class:`LLMExtractor`
    at ``url`` (key from ``OPENAI_API_KEY``), one request at a time, cached in ``cache``."""
    ex = LLMExtractor(base_url=url, model="m", cache_path=cache, concurrency=1, timeout=10,
                      max_retries=1, backoff=0.01)
    return [[[e.name, e.description] for e in ents] for ents in ex.extract(texts)]


if __name__ == "__main__":
    url, cache, out, docs = sys.argv[1:]
    with open(docs) as fh:
        entities = run(url, cache, json.load(fh))
    with open(out, "w") as fh:
        json.dump(entities, fh)
