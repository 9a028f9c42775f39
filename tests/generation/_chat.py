"""Test support: a local OpenAI-compatible chat server that counts requests and answers by role.

The answer depends on the system prompt: the entity extractor gets a fixed entity list, the
query writer a query, the judge a grade 2 (the batched judge one grade 2 per numbered
document), the verifier a yes; ``garbage=True`` answers every request with text that holds no
JSON; ``words=True`` gives the extractor the long words of the text as its entities.

``varied=True``: every answer is a fixed function of the request's own text (sha256), so
candidates differ as a real model's do: the writer asks about words of its documents, the
judge grades each (query, document) 0/1/2 alike alone or in a batch, the verifier says yes or
no.  ``missing=True``: a batched judge answer leaves out its last document's grade (numbered
keys ``{"1": g, ...}``).  ``reverse=k``: requests are held until k are in (or ``hold_s``
passes) and answered last-in first-out, so answers complete in the reverse order of their
requests; ``answered`` lists the arrival numbers in the order answered.

``count`` is the number of chat requests received.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler

from structure._proxy import LocalServer, _completion  # tests/ is on sys.path

ANSWERS = (("You extract entities", '{"entities": [{"name": "vitamin d", "description": '
                                    '"a nutrient"}]}'),
           ("You write one search query", '{"query": "does vitamin d help the bones"}'),
           ("You judge several", None),  # one grade per document: _batch_answer
           ("You judge", '{"relevance": 2}'),
           ("You check a search query", '{"well_formed": true, "answerable": true}'))


def _h(*parts) -> int:
    return int(hashlib.sha256("\0".join(parts).encode()).hexdigest()[:12], 16)


def _query_and_docs(user: str) -> tuple[str, list[str]]:
    """The query and the document texts of a judge's or verifier's prompt."""
    head, *docs = re.split(r"\n\nDocument(?: \d+)?:\n", user)
    return head.removeprefix("Query: "), docs


def _grade(query: str, doc: str) -> int:
    return _h(query, doc) % 3


def _varied(system: str, user: str) -> str | None:
    if system.startswith("You write one search query"):
        words = sorted(set(re.findall(r"[a-z]{5,}", user.lower())))
        pick = [words[_h(user, str(i)) % len(words)] for i in range(3)] if words else ["x"]
        return json.dumps({"query": "what about " + " ".join(dict.fromkeys(pick))})
    if system.startswith("You judge several"):
        query, docs = _query_and_docs(user)
        return json.dumps({"grades": [_grade(query, d) for d in docs]})
    if system.startswith("You judge"):
        query, docs = _query_and_docs(user)
        return json.dumps({"relevance": _grade(query, docs[0])})
    if system.startswith("You check a search query"):
        return json.dumps({"well_formed": True, "answerable": _h(user) % 4 != 0})
    return None


class _LastInFirstOut:
    """Holds each request until ``k`` are waiting (or ``hold_s`` passes), then lets the latest
    arrival answer first."""

    def __init__(self, k: int, hold_s: float) -> None:
        self.k, self.hold_s = k, hold_s
        self.cv = threading.Condition()
        self.stack: list = []
        self.arrived = 0
        self.open = True  # gathering a group

    def hold(self) -> int:
        """Wait for this request's turn; its arrival number."""
        with self.cv:
            me = self.arrived
            self.arrived += 1
            self.stack.append(me)
            self.cv.notify_all()
            self.cv.wait_for(lambda: len(self.stack) >= self.k or not self.open, self.hold_s)
            self.open = False
            self.cv.notify_all()
            self.cv.wait_for(lambda: self.stack[-1] == me)
        return me

    def done(self, me) -> None:
        with self.cv:
            self.stack.remove(me)
            if not self.stack:
                self.open = True
            self.cv.notify_all()


class ChatServer(LocalServer):
    def __init__(self, *, garbage: bool = False, words: bool = False, varied: bool = False,
                 missing: bool = False, reverse: int = 0, hold_s: float = 2.0) -> None:
        self.count = 0
        self.garbage, self.words, self.varied, self.missing = garbage, words, varied, missing
        self.lifo = _LastInFirstOut(reverse, hold_s) if reverse else None
        self.answered: list = []
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
                out = _completion(server.answer(body["messages"]), model=body["model"])
                if server.lifo is None:
                    return self._send(out)
                me = server.lifo.hold()
                try:
                    self._send(out)
                    with server.lock:
                        server.answered.append(me)
                finally:
                    time.sleep(0.01)  # the client reads this answer before the next is sent
                    server.lifo.done(me)

            def _send(self, out: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self._serve(Handler)

    def answer(self, messages: list) -> str:
        system, user = messages[0]["content"], messages[-1]["content"]
        if self.garbage:
            return "no JSON here"
        content = _varied(system, user) if self.varied else None
        if content is None:
            content = next((a for start, a in ANSWERS if system.startswith(start)), "{}")
        if content is None:  # the batched judge: a grade 2 per numbered document
            content = json.dumps({"grades": [2] * len(_query_and_docs(user)[1])})
        if self.missing and system.startswith("You judge several"):
            grades = json.loads(content)["grades"]
            content = json.dumps({str(i + 1): g for i, g in enumerate(grades[:-1])})
        if self.words and system.startswith("You extract entities"):
            words = re.findall(r"[a-z]{6,}", user.lower())
            content = json.dumps({"entities": [{"name": w, "description": ""}
                                               for w in dict.fromkeys(words[:12])]})
        return content


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
