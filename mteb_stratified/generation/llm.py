"""LLM query writer, relevance judge and answerability verifier over one cached, budgeted client.

All three talk to any OpenAI-compatible chat endpoint through
:class:`mteb_stratified.llm.ChatEndpoint` (retries with backoff on 429, timeouts, cut
connections, 5xx and malformed bodies; an unreachable server is an
:class:`~mteb_stratified.core.errors.EndpointUnreachable`; token and cost accounting) and share
a :class:`BudgetedCalls`:

* **persistent cache** — the ``calls`` table of :class:`mteb_stratified.llm.AnswerCache`, keyed
  by sha256 of (model, prompt version, call kind, the messages, max_tokens, temperature); every
  answer is committed as soon as it arrives, so a crash (even SIGKILL) loses at most the
  request in flight and a rerun repeats no finished call;
* **budget** in calls and tokens — every request sent (retries, re-asks and the structure's
  extraction of generated queries included) and every answer taken from the cache is a call,
  so the server never sees more requests than the budget, and a resumed run stops where an
  uninterrupted one would; the requests sent in this run and their cost are reported
  separately from the cached answers;
* **JSON answers** — parsed with :func:`mteb_stratified.llm.repair_json`; an answer with no
  usable JSON is re-asked once through :func:`mteb_stratified.llm.ask_json` (that is a call
  too);
* **threads** — one :class:`BudgetedCalls` serves the candidates the loop runs at once
  (``--concurrency``): the budget check and every tally update happen under one lock, so
  however the threads interleave no request is sent past the budget; each stored answer's
  ``calls`` is its own thread's requests (:class:`_ThreadSent`).  The token budget is checked
  before each call, so under concurrency the answers already in flight may pass it.

The judge grades up to ``batch`` pooled documents of one query in one request
(:class:`LLMJudge`: the rule, its re-ask and fall-back, and the bound on its requests).

Prompts are versioned (:data:`PROMPT_VERSION`); changing one changes every cache key.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Sequence

from ..core.errors import EndpointError, InputError
from ..llm import (DEFAULT_REASK, AnswerCache, ChatEndpoint, Permanent, ask_json, cache_key,
                   repair_json)

__all__ = ["PROMPT_VERSION", "BudgetExhausted", "BudgetedCalls", "CallCache", "LLMQueryWriter",
           "LLMJudge", "LLMVerifier", "GenerationEndpoint"]

#: v5: the documents are shown as ``title. text`` (the one joiner, mteb_stratified.io.corpus_text);
#: v4 joined them with a stop and stripped the final period of each text.  The batched judge's
#: prompt (kind ``judge-batch``) came within v5: a new kind with its own keys, no earlier prompt
#: changed, so no cached answer is lost.
#: v6: the writer is told the target leaf's label (its distinctive terms, structure/terms.py)
#: where the target's J is not low (a low-J query must avoid the documents' terms).
PROMPT_VERSION = "generate-v6"

WRITER_SYSTEM = (
    "You write one search query that a real user could type into a search engine. The query "
    "must be answerable from the documents shown, and must not copy a title. Reply with JSON "
    'only: {"query": "..."}')
#: The writer's instructions by the rank of the target's bin (:meth:`CellGrid.rank`: the lowest
#: bin is "low", the highest "high", any other "mid"), so they follow any number of bins.
REGISTER = {
    "low": "Use everyday words a layperson would use. Do NOT use these terms or their words: "
           "{terms}.",
    "mid": "Use exactly one of these terms and say the rest in your own words: {terms}.",
    "high": "Use these terms from the documents: {terms}.",
    "na": "Ask in plain words, with no technical term.",
}
SPREAD = {
    "low": "Ask about the topic that the documents share.",
    "mid": "Ask about a topic that connects the documents.",
    "high": "Ask a broad question that every one of these documents answers in part.",
    "na": "Ask a question that this one document answers.",
}
#: Worked examples (few-shot): small models follow the JSON form far more often.  Where there are
#: two, the negative one comes first: small models lean towards the answer of the last example,
#: and with the positive one last SmolLM2-135M judged almost every document irrelevant.
WRITER_EXAMPLE = [
    {"role": "user", "content": "Document 1:\nVitamin D and bone density in older women. "
                                "Supplements raised bone mineral density.\n\n"
                                f"{SPREAD['low']} "
                                + REGISTER["low"].format(terms="vitamin d, bone density")},
    {"role": "assistant", "content": '{"query": "do sunshine vitamin pills keep bones strong in '
                                     'grandmothers"}'},
]
JUDGE_SYSTEM = (
    "You judge search results. Rate how relevant the document is to the query: 2 = it answers "
    "the query, 1 = it is partly relevant, 0 = it is not relevant. Reply with JSON only: "
    '{"relevance": 0}, {"relevance": 1} or {"relevance": 2}')
JUDGE_EXAMPLE = [
    {"role": "user", "content": "Query: vitamin d bones\n\nDocument:\nGreen tea catechins "
                                "and weight loss."},
    {"role": "assistant", "content": '{"relevance": 0}'},
    {"role": "user", "content": "Query: vitamin d bones\n\nDocument:\nVitamin D supplements "
                                "raised bone mineral density in older women."},
    {"role": "assistant", "content": '{"relevance": 2}'},
]
#: The judge's prompt for several documents at once (:class:`LLMJudge`, ``batch`` > 1).
JUDGE_BATCH_SYSTEM = (
    "You judge several search results at once. Rate how relevant each numbered document is to "
    "the query: 2 = it answers the query, 1 = it is partly relevant, 0 = it is not relevant. "
    "Reply with JSON only, one grade per document in their order: "
    '{"grades": [0, 2, 1]}')
JUDGE_BATCH_EXAMPLE = [
    {"role": "user", "content": "Query: vitamin d bones\n\nDocument 1:\nGreen tea catechins and "
                                "weight loss.\n\nDocument 2:\nVitamin D supplements raised bone "
                                "mineral density in older women.\n\nDocument 3:\nCalcium intake "
                                "and hip fractures."},
    {"role": "assistant", "content": '{"grades": [0, 2, 1]}'},
]
#: Answer tokens a batched request allows per document, on top of the judge's ``max_tokens``.
BATCH_TOKENS_PER_DOC = 4
VERIFY_SYSTEM = (
    "You check a search query. Is it a well-formed question or search request (not a "
    "fragment, not a list, not instructions)? Can it be answered from the documents shown? "
    'Reply with JSON only: {"well_formed": true, "answerable": true}')
VERIFY_EXAMPLE = [
    {"role": "user", "content": "Query: green tea\n\nDocument 1:\nStatins and breast cancer "
                                "recurrence."},
    {"role": "assistant", "content": '{"well_formed": true, "answerable": false}'},
    {"role": "user", "content": "Query: does vitamin d help bones in older women\n\n"
                                "Document 1:\nVitamin D supplements raised bone mineral density "
                                "in older women."},
    {"role": "assistant", "content": '{"well_formed": true, "answerable": true}'},
]
REASK = DEFAULT_REASK


class BudgetExhausted(Exception):
    """The call or token budget is spent (a normal stop, not an error)."""


def CallCache(path: str) -> AnswerCache:
    """The generator's cache: the ``calls`` table of an
    :class:`~mteb_stratified.llm.AnswerCache`."""
    return AnswerCache(path, table="calls")


def GenerationEndpoint(base_url: str | None = None, model: str | None = None,
                       api_key: str | None = None, **kwargs) -> ChatEndpoint:
    """The chat endpoint of the query generator (its errors suggest generator options)."""
    return ChatEndpoint(base_url, model, api_key, what="the query generator",
                        alternative="point --base-url at a running OpenAI-compatible server "
                                    "(vLLM, OpenAI, transformers serve)", **kwargs)


@dataclass
class _Tally:
    sent: int = 0           # requests sent in this run (retries and re-asks included)
    cached_calls: int = 0   # calls answered from the cache (the requests each took when sent)
    tokens: int = 0         # tokens of the generator's answers, sent or from the cache
    reasks: int = 0


class _MeteredProvider:
    """A provider that counts every request it sends and refuses one past the budget."""

    def __init__(self, provider, calls: "BudgetedCalls") -> None:
        self.provider, self.calls = provider, calls

    def complete(self, **request):
        self.calls._spend()
        return self.provider.complete(**request)


class _CheckedCount:
    """A shared endpoint's ``count`` that checks the budget before it counts cached calls (the
    extractor counts each cache hit there before it uses it)."""

    def __init__(self, count, calls: "BudgetedCalls") -> None:
        self.count, self.calls = count, calls

    def __call__(self, **kw) -> None:
        if not kw.get("cached_calls"):
            return self.count(**kw)
        with self.calls._lock:
            self.calls._check()
            self.count(**kw)


class _ThreadSent(threading.local):
    """Requests sent by the current thread (a call's own count, whatever other threads send)."""

    n = 0


class BudgetedCalls:
    """Cached chat calls under a budget of ``max_calls`` calls and ``max_tokens`` tokens.

    A call is a request sent (each retry and re-ask is one, and so is every request of an
    extractor added with :meth:`share`) or an answer taken from the cache; so the budget bounds
    what is sent, and a rerun that replays a crashed run's answers from the cache stops where
    that run would have.
    """

    def __init__(self, endpoint: ChatEndpoint, cache: AnswerCache | None, *, max_calls: int,
                 max_tokens: int | None = None, progress=None,
                 retry_failed: bool = False) -> None:
        if int(max_calls) < 1:
            raise InputError(f"the budget must allow at least one call, got {max_calls}",
                             fix="pass --budget N with N ≥ 1 (LLM calls, cached ones included)")
        if max_tokens is not None and int(max_tokens) < 1:
            raise InputError(f"the token budget must be ≥ 1, got {max_tokens}",
                             fix="omit --max-tokens-total or give a positive number")
        self.endpoint = endpoint
        self.cache = cache
        self.max_calls = int(max_calls)
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        self.tally = _Tally()
        self.progress = progress
        self.retry_failed = bool(retry_failed)  # cached answers without JSON are asked again
        self._lock = threading.Lock()
        self._shared: list = []  # endpoints of extractors whose requests count here too
        self._thread = _ThreadSent()
        endpoint.provider = _MeteredProvider(endpoint.provider, self)

    def share(self, extractor) -> None:
        """Count ``extractor``'s requests, cache hits and their tokens in this budget (e.g. the
        structure's LLM extractor, which reads the entities of every generated query).

        Its cache hits are checked against the budget like the generator's (one that finds the
        budget spent raises :class:`BudgetExhausted`), so the calls never pass the budget and a
        resumed run stops where an uninterrupted one would."""
        ep = getattr(extractor, "endpoint", None)
        if isinstance(ep, ChatEndpoint) and ep is not self.endpoint:
            if not (isinstance(ep.provider, _MeteredProvider) and ep.provider.calls is self):
                ep.provider = _MeteredProvider(ep.provider, self)
            if not (isinstance(ep.count, _CheckedCount) and ep.count.calls is self):
                ep.count = _CheckedCount(ep.count, self)
            self._shared.append(ep)

    @property
    def spent(self) -> int:
        """Calls so far: requests sent plus answers from the cache (shared extractors too)."""
        return (self.tally.sent + self.tally.cached_calls
                + sum(ep.usage().get("cached_calls", 0) for ep in self._shared))

    @property
    def tokens(self) -> int:
        """Tokens so far, counted alike on every path: the answers sent in this run and those
        taken from the cache, the generator's and shared extractors' (so a resumed run stops
        under ``max_tokens`` where an uninterrupted one would)."""
        return self.tally.tokens + sum(
            u["prompt_tokens"] + u["completion_tokens"] + u.get("cached_tokens", 0)
            for u in (ep.usage() for ep in self._shared))

    @property
    def remaining(self) -> int:
        return self.max_calls - self.spent

    def _check(self) -> None:
        if self.spent >= self.max_calls:
            raise BudgetExhausted(f"call budget of {self.max_calls} spent")
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            raise BudgetExhausted(f"token budget of {self.max_tokens} spent")

    def _spend(self) -> None:
        """One request is about to be sent (called by the metered providers)."""
        with self._lock:
            self._check()
            self.tally.sent += 1
        self._thread.n += 1
        if self.progress is not None:
            self.progress.update(1)

    def key(self, kind: str, messages: list, max_tokens: int) -> str:
        return cache_key([self.endpoint.model, PROMPT_VERSION, kind, messages, max_tokens,
                          self.endpoint.temperature])

    def chat(self, kind: str, messages: list, *, max_tokens: int, usable=None) -> str:
        """One call's answer, from the cache or sent; with ``retry_failed``, a cached answer
        that ``usable(answer)`` refuses is sent again."""
        self._check()
        key = self.key(kind, messages, max_tokens)
        hit = self.cache.get(key) if self.cache is not None else None
        if hit is not None and self.retry_failed and usable is not None \
                and not usable(hit["content"]):
            hit = None
        if hit is not None:
            content, pt, ct = hit["content"], hit["prompt_tokens"], hit["completion_tokens"]
            with self._lock:  # checked and counted at once: no thread passes the budget
                self._check()
                self.tally.cached_calls += int(hit["calls"] or 1)  # the requests it took then
            if self.progress is not None:
                self.progress.update(1)
        else:
            before = self._thread.n  # this call's requests: other threads send too
            try:
                done = self.endpoint.chat(messages, max_tokens=max_tokens)
            except Permanent as exc:  # e.g. HTTP 404 for an unknown --model: not retryable
                raise EndpointError(f"the server rejected a {kind} request ({exc})",
                                    endpoint=self.endpoint.where,
                                    check="the --model name (GET /v1/models lists the "
                                          "server's models) and the server's logs") from None
            content, pt, ct = done.content, done.prompt_tokens, done.completion_tokens
            if self.cache is not None:
                self.cache.put(key, {"content": content}, kind=kind, prompt_tokens=pt,
                               completion_tokens=ct, calls=self._thread.n - before)
        with self._lock:
            self.tally.tokens += int(pt) + int(ct)
        return content

    def chat_json(self, kind: str, messages: list, *, max_tokens: int):
        """``(parsed JSON or None, raw answer)``; one re-ask when the answer holds no JSON."""
        def call(msgs, attempt):
            return self.chat(kind if attempt == 0 else kind + "-reask", msgs,
                             max_tokens=max_tokens,
                             usable=lambda answer: repair_json(answer or "") is not None)

        def reasked():
            with self._lock:
                self.tally.reasks += 1

        data, content, _ = ask_json(call, messages, parse=repair_json, reask=REASK,
                                    on_reask=reasked)
        return data, content

    def usage(self) -> dict:
        """``calls`` (sent + cached), ``paid_calls`` (requests sent in this run, retries and
        shared extractors included), ``cached_calls``, tokens and cost."""
        with self._lock:
            t = _Tally(**vars(self.tally))
        eps = [self.endpoint, *self._shared]
        us = [ep.usage() for ep in eps]
        return {"calls": self.spent, "paid_calls": t.sent,
                "cached_calls": self.spent - t.sent, "reasks": t.reasks, "tokens": self.tokens,
                "paid_prompt_tokens": sum(u["prompt_tokens"] for u in us),
                "paid_completion_tokens": sum(u["completion_tokens"] for u in us),
                "requests": t.sent, "retries": sum(u["retries"] for u in us),
                "cost_usd": round(sum(u["cost_usd"] for u in us), 6),
                "budget_calls": self.max_calls, "budget_tokens": self.max_tokens}


def _doc_block(docs: Sequence[tuple[str, str]], chars: int) -> str:
    return "\n\n".join(f"Document {i + 1}:\n{text[:chars]}" for i, (_, text) in enumerate(docs))


def _first_string(data, *names) -> str | None:
    if isinstance(data, dict):
        for n in names:
            v = data.get(n)
            if isinstance(v, str) and v.strip():
                return " ".join(v.split())
        if len(data) == 1:
            v = next(iter(data.values()))
            if isinstance(v, str) and v.strip():
                return " ".join(v.split())
    if isinstance(data, list) and data and isinstance(data[0], str) and data[0].strip():
        return " ".join(data[0].split())
    return None


class _LLMPart:
    """Shared by the writer, judge and verifier: their calls and recorded settings."""

    #: its requests may overlap with other candidates' (the loop's CPU lock is not taken)
    sends_requests = True

    def __init__(self, calls: BudgetedCalls, *, doc_chars: int, max_tokens: int):
        self.calls, self.doc_chars, self.max_tokens = calls, doc_chars, max_tokens

    def params(self) -> dict:
        return {"kind": "llm", "rule": f"llm:{self.calls.endpoint.model}",
                "model": self.calls.endpoint.model,
                "prompt_version": PROMPT_VERSION, "doc_chars": self.doc_chars}


class LLMQueryWriter(_LLMPart):
    """Writes a query aimed at a target cell (``QueryWriter`` protocol)."""

    def __init__(self, calls: BudgetedCalls, *, doc_chars: int = 600, max_tokens: int = 64):
        super().__init__(calls, doc_chars=doc_chars, max_tokens=max_tokens)

    def max_calls(self, n_docs: int) -> int:
        return 2

    def prompt(self, target, seed_docs: Sequence[tuple[str, str]],
               terms: Sequence[str] = ()) -> str:
        """The user message :meth:`write` sends: the seed documents, then (where the target's
        J is not low) the target leaf's label, the spread and the register instructions."""
        rank = target.rank("alignment")
        register = REGISTER[rank].format(terms=", ".join(terms) or "-")
        label = getattr(target, "label", None)
        topic = (f"The documents are from the topic \"{label}\". "
                 if label and rank not in ("low", "na") else "")
        return (f"{_doc_block(seed_docs, self.doc_chars)}\n\n"
                f"{topic}{SPREAD[target.rank('dispersion')]} {register}")

    def write(self, target, seed_docs: Sequence[tuple[str, str]],
              terms: Sequence[str] = ()) -> tuple[str | None, str]:
        """``(query or None, raw answer)``: None when the answer holds no query in JSON.

        ``terms``: the seeds' own entities (most central first), to use for High J and to
        avoid for Low J.
        """
        user = self.prompt(target, seed_docs, terms)
        data, raw = self.calls.chat_json(
            "write", [{"role": "system", "content": WRITER_SYSTEM}, *WRITER_EXAMPLE,
                      {"role": "user", "content": user}], max_tokens=self.max_tokens)
        return _first_string(data, "query", "question", "search"), raw


def _grade(data) -> int | None:
    v = data
    if isinstance(data, dict):
        v = data.get("relevance", data.get("score", data.get("grade")))
        if v is None and len(data) == 1:
            v = next(iter(data.values()))
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)) and v in (0, 1, 2):
        return int(v)
    if isinstance(v, str) and v.strip() in ("0", "1", "2"):
        return int(v.strip())
    return None


def _grades(data, n: int) -> list:
    """The grades of documents 1..n in a batched answer (None where missing or not 0/1/2).

    Read from ``{"grades": [...]}`` (or ``relevance``/``scores``), a bare list, or numbered keys
    (``{"1": 2, "2": 0}``, ``{"Document 2": 0}``); a list is read by position only when it holds
    exactly n items (another length cannot be lined up with the documents: all missing).
    """
    if isinstance(data, dict):
        named = next((data[k] for k in ("grades", "relevance", "scores")
                      if isinstance(data.get(k), (list, dict))), None)
        data = data if named is None else named
    if isinstance(data, list):
        return [_grade(v) for v in data] if len(data) == n else [None] * n
    if isinstance(data, dict):
        numbered: dict = {}
        for k, v in data.items():
            m = re.fullmatch(r"\D*?(\d+)", str(k).strip())
            if m:
                numbered.setdefault(int(m.group(1)), v)
        return [_grade(numbered.get(i + 1)) for i in range(n)]
    return [None] * n


def _chunk_sizes(n: int, batch: int) -> list[int]:
    """Sizes of the requests ``n`` documents are cut into: ``k = ceil(n / batch)`` chunks as
    even as can be (9 documents, batch 8: 5 + 4, not 8 + 1)."""
    if n <= 0:
        return []
    k = -(-n // batch)
    base, extra = divmod(n, k)
    return [base + 1] * extra + [base] * (k - extra)


class LLMJudge(_LLMPart):
    """Graded relevance (0/1/2) of pooled documents for a query (``RelevanceJudge`` protocol).

    Batching (``batch`` > 1): the pooled documents, in pool order, are cut into
    :func:`_chunk_sizes` chunks of at most ``batch``; each document's text is cut to
    ``doc_chars``, so a request holds at most ``batch × doc_chars`` characters of documents.  A
    chunk of several documents is one request (numbered documents, answer
    ``{"grades": [...]}``, read by :func:`_grades`; one re-ask when it holds no JSON); a
    document whose grade is missing from that answer is then graded alone in ONE request (no
    re-ask; still no grade → None).  A chunk of one document is graded alone, with a re-ask.

    Each grade names its rule: ``<rule>:batch`` (graded within a batched answer) or
    ``<rule>:single`` (graded alone), ``<rule>`` being ``params()["rule"]`` (``llm:<model>``).
    """

    def __init__(self, calls: BudgetedCalls, *, doc_chars: int = 800, max_tokens: int = 16,
                 batch: int = 1):
        super().__init__(calls, doc_chars=doc_chars, max_tokens=max_tokens)
        if int(batch) < 1:
            raise InputError(f"the judge's batch must be ≥ 1, got {batch}",
                             fix="pass --judge-batch N with N ≥ 1 (1: one request per document)")
        self.batch = int(batch)

    def params(self) -> dict:
        return {**super().params(), "batch": self.batch}

    def max_calls(self, n_docs: int) -> int:
        """Requests for one query's ``n_docs`` pooled documents at most, retries aside: a chunk
        of one document 2 (a re-ask), a chunk of s ≥ 2 documents 2 + s (a re-ask, then each
        document alone once)."""
        return sum(2 if s == 1 else 2 + s for s in _chunk_sizes(int(n_docs), self.batch))

    def judge(self, query: str, docs: Sequence[tuple[str, str]], seeds=()) -> dict:
        """``{doc_id: (0|1|2 or None, rule)}`` (None: no usable grade; rules: the class
        docstring); the seeds are judged like every other pooled document."""
        docs, out, start = list(docs), {}, 0
        rule = self.params()["rule"]
        for size in _chunk_sizes(len(docs), self.batch):
            part, start = docs[start:start + size], start + size
            if size == 1:
                out[part[0][0]] = (self._alone(query, part[0][1], reask=True), f"{rule}:single")
                continue
            for (doc_id, text), grade in zip(part, self._batched(query, part)):
                out[doc_id] = ((grade, f"{rule}:batch") if grade is not None else
                               (self._alone(query, text, reask=False), f"{rule}:single"))
        return out

    def _alone(self, query: str, text: str, *, reask: bool) -> int | None:
        """One document's grade from the single-document prompt (with or without a re-ask)."""
        user = f"Query: {query}\n\nDocument:\n{text[:self.doc_chars]}"
        messages = [{"role": "system", "content": JUDGE_SYSTEM}, *JUDGE_EXAMPLE,
                    {"role": "user", "content": user}]
        if reask:
            return _grade(self.calls.chat_json("judge", messages, max_tokens=self.max_tokens)[0])
        answer = self.calls.chat("judge", messages, max_tokens=self.max_tokens,
                                 usable=lambda a: repair_json(a or "") is not None)
        return _grade(repair_json(answer or ""))

    def _batched(self, query: str, part: Sequence[tuple[str, str]]) -> list:
        """The grades a batched answer gives the documents of ``part`` (None where missing)."""
        user = f"Query: {query}\n\n{_doc_block(part, self.doc_chars)}"
        data, _ = self.calls.chat_json(
            "judge-batch", [{"role": "system", "content": JUDGE_BATCH_SYSTEM},
                            *JUDGE_BATCH_EXAMPLE, {"role": "user", "content": user}],
            max_tokens=self.max_tokens + BATCH_TOKENS_PER_DOC * len(part))
        return _grades(data, len(part))


def _flag(data, name: str) -> bool | None:
    if not isinstance(data, dict):
        return None
    v = data.get(name)
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "yes", "false", "no"):
        return v.strip().lower() in ("true", "yes")
    return None


class LLMVerifier(_LLMPart):
    """Is the query well-formed and answerable from its judged documents? (``Verifier``)."""

    def __init__(self, calls: BudgetedCalls, *, doc_chars: int = 500, max_docs: int = 3,
                 max_tokens: int = 32):
        super().__init__(calls, doc_chars=doc_chars, max_tokens=max_tokens)
        self.max_docs = max_docs

    def params(self) -> dict:
        return {**super().params(), "max_docs": self.max_docs}

    def max_calls(self, n_docs: int) -> int:
        return 2

    def verify(self, query: str, docs: Sequence[tuple[str, str]], context=None) -> dict:
        """``{"well_formed": bool|None, "answerable": bool|None}`` (None: no usable answer)."""
        user = f"Query: {query}\n\n{_doc_block(list(docs)[:self.max_docs], self.doc_chars)}"
        data, _ = self.calls.chat_json(
            "verify", [{"role": "system", "content": VERIFY_SYSTEM}, *VERIFY_EXAMPLE,
                       {"role": "user", "content": user}], max_tokens=self.max_tokens)
        return {"well_formed": _flag(data, "well_formed"), "answerable": _flag(data, "answerable")}
