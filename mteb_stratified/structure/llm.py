"""LLM entity extractor for any OpenAI-compatible endpoint, with a persistent cache.

The transport — retries with backoff on 429, timeouts, cut connections, 5xx and malformed
bodies; error mapping (an unreachable server is an
:class:`~mteb_stratified.core.errors.EndpointUnreachable` that says how to check it); token and
cost accounting — is :class:`mteb_stratified.llm.ChatEndpoint`, which the extractor *uses*.
What is particular to extraction:

* a versioned prompt (:data:`PROMPT_VERSION`) asking for ``{"entities": [{"name",
  "description"}]}``;
* malformed JSON is repaired (:func:`mteb_stratified.llm.repair_json`); if that fails the model
  is re-asked once (:func:`mteb_stratified.llm.ask_json`); if that fails too the document gets
  a failure record (cached, reported in the artifact, never dropped silently;
  ``retry_failed=True`` tries it again);
* one record per document in the ``answers`` table of :class:`mteb_stratified.llm.AnswerCache`,
  keyed by sha256 of (model, prompt version, sha256 of the text sent), committed by the thread
  that received the answer the moment it arrives.  A first answer that is re-asked is committed
  too, as a ``"partial"`` record, before the re-ask is sent: a rerun re-asks from it and never
  pays for that first answer again.  So a crash (even SIGKILL) loses at most the requests in
  flight, and a rerun sends again at most those;
* :meth:`LLMExtractor.plan` says, before anything is sent, which documents will be asked (never
  answered, failed before and asked again with ``retry_failed``, or re-asked from a partial
  record) and how many first requests that is;
* a thread pool (``concurrency``) and a progress bar.

Output quality depends on the model: the tests use SmolLM2-135M-Instruct, whose entity lists are
poor; they prove the path works, not the quality.
"""

from __future__ import annotations

import functools
import hashlib
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Sequence

from ..core.errors import InputError
from ..llm import (DEFAULT_MAX_ANSWER_BYTES, AnswerCache, ChatEndpoint, Permanent, ask_json,
                   cache_key, repair_json)
from .extractors import DESCRIPTION_CHARS, Entity

__all__ = ["LLMExtractor", "PROMPT_VERSION", "parse_entities", "repair_json", "AnswerCache"]

PROMPT_VERSION = "entities-v1"
SYSTEM_PROMPT = (
    "You extract entities from a scientific document. An entity is one atomic concept: a "
    "disease, chemical, nutrient, food, gene, organism, body part, method, measure or "
    "population. Write each name in singular, lower case, with abbreviations spelt out. Give "
    "each a short description taken from the document. Reply with JSON only, in this form:\n"
    '{"entities": [{"name": "vitamin d", "description": "nutrient whose blood level was '
    'measured"}]}')
REASK_PROMPT = ('That was not valid JSON. Reply with only the JSON object '
                '{"entities": [{"name": "...", "description": "..."}]} and nothing else.')


def parse_entities(content: str) -> list[Entity] | None:
    """Entities from a model answer, or ``None`` if it holds no usable entity list."""
    data = repair_json(content or "")
    if isinstance(data, dict):
        items = data.get("entities")
        if items is None and len(data) == 1:
            items = next(iter(data.values()))
    else:
        items = data
    if not isinstance(items, list):
        return None
    out = []
    for item in items:
        if isinstance(item, str):
            name, desc = item, ""
        elif isinstance(item, dict):
            name = item.get("name") or item.get("entity") or ""
            desc = item.get("description") or ""
        else:
            continue
        if isinstance(name, str) and name.strip():
            desc = " ".join(str(desc).split())[:DESCRIPTION_CHARS]
            out.append(Entity(" ".join(name.split()), desc))
    if items and not out:
        return None
    return out


class LLMExtractor:
    """Entities from an OpenAI-compatible chat-completions endpoint (JSON answers, cached).

    Honours :class:`~.extractors.EntityExtractor`.  ``endpoint`` is its
    :class:`~mteb_stratified.llm.ChatEndpoint`; ``usage()`` adds the cache hits and failed
    documents to the endpoint's counters.
    """

    name = "llm-openai-compatible"
    version = "1"
    prompt_version = PROMPT_VERSION

    def __init__(self, base_url: str | None = None, model: str | None = None,
                 api_key: str | None = None, *, concurrency: int = 4, max_tokens: int = 512,
                 timeout: float = 60.0, max_retries: int = 5, backoff: float = 0.5,
                 max_backoff: float = 30.0, cache_path: str | None = None,
                 price_in: float = 0.0, price_out: float = 0.0, temperature: float = 0.0,
                 max_chars: int = 4000, reask: bool = True, retry_failed: bool = False,
                 progress: bool = False, client=None, provider=None,
                 max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES) -> None:
        # what a worker's twin needs (worker_factory): the endpoint's settings, no cache
        self._settings = dict(base_url=base_url, model=model, api_key=api_key,
                              concurrency=concurrency, max_tokens=max_tokens, timeout=timeout,
                              max_retries=max_retries, backoff=backoff, max_backoff=max_backoff,
                              price_in=price_in, price_out=price_out, temperature=temperature,
                              max_chars=max_chars, reask=reask,
                              max_answer_bytes=max_answer_bytes)
        self._custom = client is not None or provider is not None
        self._stored: set = set()  # keys stored by store(): answers paid for by workers
        self._answered: set = set()  # keys whose answer this extractor stored (ok or failed)
        self.endpoint = ChatEndpoint(
            base_url, model, api_key, max_tokens=max_tokens, timeout=timeout,
            max_retries=max_retries, backoff=backoff, max_backoff=max_backoff,
            price_in=price_in, price_out=price_out, temperature=temperature,
            what="the LLM extractor", alternative="use --extractor offline (no key, no network)",
            client=client, provider=provider, max_answer_bytes=max_answer_bytes)
        # as resolved here (the driver's environment), not again on each worker's node
        self._settings.update(base_url=self.endpoint.where, model=self.endpoint.model,
                              api_key=self.endpoint.api_key)
        if concurrency < 1:
            raise InputError("concurrency must be >= 1", fix="e.g. --concurrency 4")
        self.concurrency = int(concurrency)
        self.max_chars = int(max_chars)
        self.reask = bool(reask)
        self.retry_failed = bool(retry_failed)
        self.progress = bool(progress)
        self.cache = AnswerCache(cache_path, table="answers") if cache_path else None
        self.failures: dict[int, str] = {}

    @property
    def model(self) -> str:
        return self.endpoint.model

    @property
    def base_url(self) -> str | None:
        return self.endpoint.base_url

    def usage(self) -> dict:
        return self.endpoint.usage()

    def params(self) -> dict:
        e = self.endpoint
        return {"model": e.model, "prompt_version": self.prompt_version,
                "temperature": e.temperature, "max_tokens": e.max_tokens,
                "max_chars": self.max_chars}

    def _extract_one(self, text: str, key: str | None = None,
                     partial: dict | None = None) -> dict:
        """The answer record for ``text``.  ``partial``: a stored first answer that was being
        re-asked (its requests and tokens are the record's too; it is not sent again).  With
        ``key`` and a cache, a first answer about to be re-asked is committed as a partial
        record before the re-ask is sent."""
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": f"Document:\n{text[:self.max_chars]}\n\nJSON:"}]
        tokens = {k: int((partial or {}).get(k) or 0)
                  for k in ("prompt_tokens", "completion_tokens", "calls")}

        def call(msgs, attempt):
            if attempt == 0 and partial is not None:  # paid before the interruption
                self.endpoint.count(cached_calls=tokens["calls"],
                                    cached_tokens=tokens["prompt_tokens"]
                                    + tokens["completion_tokens"])
                tokens["last"] = partial["first"]
                return partial["first"]
            done = self.endpoint.chat(msgs)
            tokens["prompt_tokens"] += done.prompt_tokens
            tokens["completion_tokens"] += done.completion_tokens
            tokens["calls"] += 1
            tokens["last"] = done.content
            return done.content

        def reasked():
            self.endpoint.count(reasks=1)
            if key is not None and self.cache is not None and partial is None:
                hit = self.cache.get(key)  # another process's whole answer is never replaced
                if hit is None or hit["status"] in ("failed", "partial"):
                    self._put(key, dict(status="partial", first=tokens.get("last") or "",
                                        entities=[], **_counts(tokens)))

        try:
            if self.reask:
                entities, content, _ = ask_json(call, messages, parse=parse_entities,
                                                reask=REASK_PROMPT, on_reask=reasked)
            else:
                content = call(messages, 0)
                entities = parse_entities(content or "")
        except Permanent as exc:
            return dict(status="failed", error=str(exc), entities=[],
                        raw=tokens.get("last", ""), **_counts(tokens))
        if entities is None:
            return dict(status="failed", entities=[], raw=content[:2000], **_counts(tokens),
                        error="malformed JSON after repair and re-ask: " + content[:200])
        return dict(status="ok", raw=content[:2000], **_counts(tokens),
                    entities=[[e.name, e.description] for e in entities])

    # -- answers asked elsewhere (the Ray engine's workers) ------------------------------------
    def _key(self, text: str) -> str:
        doc_hash = hashlib.sha256(text[:self.max_chars].encode("utf-8")).hexdigest()
        return cache_key(self.model, self.prompt_version, doc_hash)

    def _put(self, key: str, record: dict) -> None:
        self.cache.put(key, record, kind="extract", prompt_tokens=record["prompt_tokens"],
                       completion_tokens=record["completion_tokens"], calls=record["calls"])
        if record["status"] != "partial":
            self._answered.add(key)

    def _usable(self, hit, key: str) -> bool:
        """Whether a cached record is the document's answer (a partial one is not; a failed
        one is not with ``retry_failed``, unless it was asked again by this extractor: a
        document is retried once a run)."""
        return hit is not None and hit["status"] != "partial" and not (
            hit["status"] == "failed" and self.retry_failed and key not in self._answered)

    @staticmethod
    def _partial(hit) -> dict | None:
        """A cached first answer that was being re-asked (re-asked from, never sent again)."""
        if hit is None or hit.get("status") != "partial" or not isinstance(hit.get("first"), str):
            return None
        return hit

    def _ask(self, text: str, key: str, partial: dict | None) -> dict:
        """:meth:`_extract_one`, committed to the cache by this thread as soon as it arrives."""
        record = self._extract_one(text, key, partial)
        if self.cache is not None:
            self._put(key, record)
        return record

    def plan(self, texts: Sequence[str]) -> dict:
        """What :meth:`extract` of ``texts`` would send, before anything is sent: the
        documents (each distinct text once) answered from the cache (``cached``), never
        answered (``new``), failed before and asked again (``failed``, with ``retry_failed``;
        without it a failure is a cached answer), and re-asked from a stored first answer
        (``partial``: no first request).  ``first_requests`` = new + failed: one request each,
        plus a re-ask for each answer without JSON (``partial`` documents are only re-asked)."""
        out = {"documents": 0, "cached": 0, "new": 0, "failed": 0, "partial": 0}
        for key in dict.fromkeys(self._key(t) for t in texts):
            hit = self.cache.get(key) if self.cache is not None else None
            out["documents"] += 1
            out["cached" if self._usable(hit, key) else "partial" if self._partial(hit)
                else "failed" if hit is not None and hit["status"] == "failed" else "new"] += 1
        out["first_requests"] = out["new"] + out["failed"]
        return out

    def pending(self, texts: Sequence[str]) -> list[tuple[str, str]]:
        """``(key, text)`` of the texts whose answers the cache lacks (each key once): what
        :meth:`extract` would pay for."""
        if self.cache is None:
            raise InputError("the LLM extractor needs its answer cache to run on workers",
                             fix="give it a cache_path (the structure command does)")
        out: dict = {}
        for text in texts:
            key = self._key(text)
            if key not in out and not self._usable(self.cache.get(key), key):
                out[key] = text
        return list(out.items())

    def resume_point(self, key: str) -> dict | None:
        """The partial record of ``key`` (a stored first answer being re-asked), for a worker
        to re-ask from (:meth:`answer`), or None."""
        return self._partial(self.cache.get(key)) if self.cache is not None else None

    def answer(self, text: str, partial: dict | None = None) -> dict:
        """The answer record for ``text``, asked of the endpoint (a paid call; not cached here:
        the process that owns the cache stores it with :meth:`store`); ``partial``: the
        :meth:`resume_point` to re-ask from."""
        return self._extract_one(text, partial=partial)

    def store(self, key: str, record: dict, partial: dict | None = None) -> None:
        """Cache an answer a worker paid for; :meth:`extract` then reads it without counting it
        as a cache hit (the worker's requests are counted by the caller; its tokens here, less
        those of the ``partial`` record it re-asked from, paid before)."""
        self._put(key, record)
        self._stored.add(key)
        before = {k: int((partial or {}).get(k) or 0)
                  for k in ("prompt_tokens", "completion_tokens", "calls")}
        self.endpoint.count(
            prompt_tokens=int(record["prompt_tokens"] or 0) - before["prompt_tokens"],
            completion_tokens=int(record["completion_tokens"] or 0) - before["completion_tokens"])
        if partial is not None:  # as the local path counts the first answer it re-asked from
            self.endpoint.count(cached_calls=before["calls"],
                                cached_tokens=before["prompt_tokens"]
                                + before["completion_tokens"])

    def worker_factory(self):
        """A picklable maker of this extractor's twin in a worker: the same endpoint and
        settings, no cache (the caller's cache stays the one source of truth)."""
        if self._custom:
            raise InputError("an LLM extractor made with its own client or provider cannot be "
                             "copied to workers", fix="give base_url, model and api_key instead")
        return functools.partial(LLMExtractor, **self._settings)

    # -- batch ----------------------------------------------------------------------------------
    def extract(self, texts: Sequence[str]) -> list[list[Entity]]:
        self.failures = {}
        results: list = [None] * len(texts)
        todo = []
        for i, text in enumerate(texts):
            key = self._key(text)
            hit = self.cache.get(key) if self.cache else None
            if key in self._stored and hit is not None:
                self._stored.discard(key)  # counted once by store(); a repeat is a cache hit
                results[i] = hit  # a worker's paid answer
            elif self._usable(hit, key):
                self.endpoint.count(cached=1, cached_calls=int(hit["calls"] or 1),
                                    cached_tokens=int(hit["prompt_tokens"] or 0)
                                    + int(hit["completion_tokens"] or 0))
                results[i] = hit
            else:
                todo.append((i, text, key, self._partial(hit)))
        todo, repeats = _first_of_each(todo)
        bar = None
        if self.progress and todo:
            from tqdm.auto import tqdm
            bar = tqdm(total=len(todo), desc="llm extract", unit="doc")
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {pool.submit(self._ask, text, key, partial): i
                       for i, text, key, partial in todo}
            try:
                for fut in as_completed(futures):
                    i = futures[fut]
                    record = fut.result()  # committed by the thread that received it
                    results[i] = record
                    for j in repeats.get(i, ()):  # the same text later in the batch
                        results[j] = record
                    if bar is not None:
                        u = self.endpoint.usage()
                        bar.update(1)
                        bar.set_postfix(tokens=u["prompt_tokens"] + u["completion_tokens"])
            except BaseException:
                for f in futures:
                    f.cancel()
                raise
            finally:
                if bar is not None:
                    bar.close()
        out = []
        for i, record in enumerate(results):
            if record["status"] == "failed":
                self.failures[i] = record.get("error") or "failed"
                self.endpoint.count(failed_docs=1)
            out.append([Entity(n, d) for n, d in record["entities"]])
        return out


def _first_of_each(todo: list) -> tuple[list, dict]:
    """``todo`` with each key once (the same text is asked once), and ``{first index:
    [indexes of its repeats]}``."""
    first: dict = {}
    kept, repeats = [], {}
    for item in todo:
        i, key = item[0], item[2]
        if key in first:
            repeats.setdefault(first[key], []).append(i)
        else:
            first[key] = i
            kept.append(item)
    return kept, repeats


def _counts(tokens: dict) -> dict:
    return {k: tokens[k] for k in ("prompt_tokens", "completion_tokens", "calls")}
