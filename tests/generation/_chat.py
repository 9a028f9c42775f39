"""Test support: a local OpenAI-compatible chat server that counts requests and answers by role.

The answer depends on the system prompt: the entity extractor gets a fixed entity list, the
query writer a query, the judge a grade 2, the verifier a yes; ``garbage=True`` answers every
request with text that holds no JSON; ``words=True`` gives the extractor the long words of
the text as its entities.  ``count`` is the number of chat requests received.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler

from structure._proxy import LocalServer, _completion  # tests/ is on sys.path

ANSWERS = (("You extract entities", '{"entities": [{"name": "vitamin d", "description": '
                                    '"a nutrient"}]}'),
           ("You write one search query", '{"query": "does vitamin d help the bones"}'),
           ("You judge", '{"relevance": 2}'),
           ("You check a search query", '{"well_formed": true, "answerable": true}'))


class ChatServer(LocalServer):
    def __init__(self, *, garbage: bool = False, words: bool = False) -> None:
        self.count = 0
        self.garbage, self.words = garbage, words
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                with server.lock:
                    server.count += 1
                system = body["messages"][0]["content"]
                content = "no JSON here" if server.garbage else next(
                    (a for start, a in ANSWERS if system.startswith(start)), "{}")
                if server.words and system.startswith("You extract entities"):
                    words = re.findall(r"[a-z]{6,}", body["messages"][-1]["content"].lower())
                    content = json.dumps({"entities": [{"name": w, "description": ""}
                                                       for w in dict.fromkeys(words[:12])]})
                out = _completion(content, model=body["model"])
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self._serve(Handler)


def llm_copy(src: str, dst: str, *, base_url: str, cache_path: str) -> str:
    """A copy of the artifact ``src`` whose metadata says it was built by an LLM extractor at
    ``base_url`` with its cache at ``cache_path`` (as a copied, foreign artifact would)."""
    import shutil
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.sqlite*", ".work"))
    meta_path = f"{dst}/metadata.json"
    with open(meta_path) as fh:
        meta = json.load(fh)
    meta["extractor"].update(kind="llm", name="llm-openai-compatible", prompt_version="entities-v1",
                             params={"model": "their-model", "max_tokens": 512,
                                     "max_chars": 4000, "temperature": 0.0},
                             init_params={"base_url": base_url, "model": "their-model",
                                          "cache_path": cache_path, "api_key": "theirs"})
    with open(meta_path, "w") as fh:
        json.dump(meta, fh)
    return dst
