"""LLM entity extractor for any OpenAI-compatible endpoint, with a persistent SQLite cache.

* Versioned prompt (:data:`PROMPT_VERSION`) asking for ``{"entities": [{"name", "description"}]}``.
* Retries with exponential backoff (``Retry-After`` honoured) on 429, timeouts, cut connections,
  5xx and malformed HTTP bodies.  A document whose request still fails after ``max_retries``
  aborts the run with an :class:`InputError` (the endpoint is unreachable or overloaded); the
  documents finished so far are cached, so a rerun resumes without repeating them.
* Malformed JSON in the answer is repaired (code fences, trailing commas, single quotes,
  unquoted keys, unclosed brackets); if that fails the model is re-asked once; if that fails too
  the document gets a failure record (cached, reported in the artifact, never dropped silently;
  ``retry_failed=True`` tries it again).
* Cache key: sha256 of (model, prompt version, sha256 of the text sent).  Every finished
  document is committed at once, so a crash (even SIGKILL) loses at most the requests in flight.
* Concurrency limit (thread pool), progress bar (tqdm), token and cost accounting.

Output quality depends on the model: the tests use SmolLM2-135M-Instruct, whose entity lists are
poor; they prove the path works, not the quality.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Sequence

from .._optional import require
from ..core.errors import InputError
from .extractors import DESCRIPTION_CHARS, Entity

__all__ = ["ChatEndpoint", "open_cache_db", "LLMExtractor", "PROMPT_VERSION", "parse_entities", "repair_json", "AnswerCache"]

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


# --------------------------------------------------------------------------------------------
# JSON repair and parsing
# --------------------------------------------------------------------------------------------
_FENCE = re.compile(r"```(?:json)?\s*(.*?)(?:```|$)", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_BARE_KEY = re.compile(r"([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:")


def _close_brackets(text: str) -> str:
    stack, in_str, esc = [], False, False
    for ch in text:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    if in_str:
        text += '"'
    text = re.sub(r",\s*$", "", text.rstrip())
    text = re.sub(r'"\s*:\s*$', '": ""', text)
    return text + "".join(reversed(stack))


def repair_json(text: str):
    """Parse ``text`` as JSON, repairing common LLM mistakes; ``None`` if it cannot."""
    text = text.strip()
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return None
    text = text[min(starts):]
    candidates = [text]
    end = max(text.rfind("}"), text.rfind("]"))
    if end >= 0:
        candidates.append(text[:end + 1])
    fixed = text.replace("“", '"').replace("”", '"').replace("’", "'")
    if '"' not in fixed:
        fixed = fixed.replace("'", '"')
    fixed = _BARE_KEY.sub(r'\1"\2":', fixed)
    fixed = _TRAILING_COMMA.sub(r"\1", fixed)
    candidates += [fixed, _TRAILING_COMMA.sub(r"\1", _close_brackets(fixed))]
    for cand in candidates:
        try:
            return json.loads(cand)
        except (json.JSONDecodeError, ValueError):
            continue
    return None


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


# --------------------------------------------------------------------------------------------
# cache
# --------------------------------------------------------------------------------------------
def open_cache_db(path: str, schema: str) -> sqlite3.Connection:
    """A crash-safe SQLite connection (WAL, synchronous=FULL) with ``schema`` created."""
    if os.path.dirname(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
    db = sqlite3.connect(path, check_same_thread=False, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute(schema)
    db.commit()
    return db


class AnswerCache:
    """SQLite cache of LLM answers keyed by (model, prompt version, document hash)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._db = open_cache_db(
            path,
            "CREATE TABLE IF NOT EXISTS answers (key TEXT PRIMARY KEY, model TEXT, "
            "prompt_version TEXT, doc_hash TEXT, status TEXT, entities TEXT, raw TEXT, "
            "error TEXT, prompt_tokens INTEGER, completion_tokens INTEGER, calls INTEGER)")

    @staticmethod
    def key(model: str, prompt_version: str, doc_hash: str) -> str:
        return hashlib.sha256(f"{model}\0{prompt_version}\0{doc_hash}".encode()).hexdigest()

    def get(self, key: str) -> dict | None:
        with self._lock:
            row = self._db.execute(
                "SELECT status, entities, error, prompt_tokens, completion_tokens, calls "
                "FROM answers WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return {"status": row[0], "entities": json.loads(row[1] or "[]"), "error": row[2],
                "prompt_tokens": row[3], "completion_tokens": row[4], "calls": row[5]}

    def put(self, key: str, model: str, prompt_version: str, doc_hash: str, record: dict) -> None:
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO answers VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (key, model, prompt_version, doc_hash, record["status"],
                 json.dumps(record.get("entities", []), ensure_ascii=False),
                 record.get("raw", ""), record.get("error"), record.get("prompt_tokens", 0),
                 record.get("completion_tokens", 0), record.get("calls", 0)))
            self._db.commit()

    def count(self, status: str | None = None) -> int:
        with self._lock:
            if status is None:
                return self._db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
            return self._db.execute("SELECT COUNT(*) FROM answers WHERE status = ?",
                                    (status,)).fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


# --------------------------------------------------------------------------------------------
# extractor
# --------------------------------------------------------------------------------------------
class _Transient(Exception):
    """A request failure worth retrying (429, timeout, cut connection, 5xx, bad body)."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ChatEndpoint:
    """An OpenAI-compatible chat-completions endpoint: retries, backoff, token/cost accounting.

    Shared by the LLM extractor and the query generator (``mteb_stratified.generation``).
    """

    #: what to suggest instead when no key / no endpoint is usable (subclasses override)
    alternative = "use --extractor offline (no key, no network)"
    what = "the LLM extractor"

    def __init__(self, base_url: str | None = None, model: str | None = None,
                 api_key: str | None = None, *, max_tokens: int = 512, timeout: float = 60.0,
                 max_retries: int = 5, backoff: float = 0.5, max_backoff: float = 30.0,
                 price_in: float = 0.0, price_out: float = 0.0, temperature: float = 0.0,
                 client=None) -> None:
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        self.model = model or os.environ.get("OPENAI_MODEL")
        if not self.model:
            raise InputError(f"no model given for {self.what}",
                             fix=f"pass --model NAME (or set OPENAI_MODEL), or {self.alternative}")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key and client is None:
            raise InputError(
                f"no API key for {self.what}",
                fix="set OPENAI_API_KEY or pass --api-key (any value, e.g. 'none', for a "
                    f"local server), or {self.alternative}")
        self.api_key = key
        self.max_tokens = int(max_tokens)
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.price_in = float(price_in)
        self.price_out = float(price_out)
        self.temperature = float(temperature)
        self._client = client
        self._lock = threading.Lock()
        self._usage = {"requests": 0, "retries": 0, "reasks": 0, "cached": 0,
                       "prompt_tokens": 0, "completion_tokens": 0, "failed_docs": 0}

    def usage(self) -> dict:
        with self._lock:
            u = dict(self._usage)
        u["cost_usd"] = round(u["prompt_tokens"] * self.price_in / 1e6
                              + u["completion_tokens"] * self.price_out / 1e6, 6)
        return u

    def _client_or_new(self):
        if self._client is None:
            openai = require("openai", "llm")
            self._client = openai.OpenAI(base_url=self.base_url, api_key=self.api_key,
                                         max_retries=0, timeout=self.timeout)
        return self._client

    def _count(self, **kw) -> None:
        with self._lock:
            for k, v in kw.items():
                self._usage[k] = self._usage.get(k, 0) + v

    # -- one request with retries -------------------------------------------------------------
    def _call(self, messages: list[dict], *, max_tokens: int | None = None):
        openai = require("openai", "llm")
        client = self._client_or_new()
        last = None
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._count(retries=1)
                delay = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
                delay *= 0.5 + random.random() / 2
                if last is not None and last.retry_after is not None:
                    delay = max(delay, min(self.max_backoff, last.retry_after))
                time.sleep(delay)
            self._count(requests=1)
            try:
                resp = client.chat.completions.create(
                    model=self.model, messages=messages, temperature=self.temperature,
                    max_tokens=self.max_tokens if max_tokens is None else max_tokens)
                if isinstance(resp, str) or not getattr(resp, "choices", None):
                    raise _Transient("response body has no choices")
                content = resp.choices[0].message.content
                if content is None:
                    raise _Transient("response has no message content")
                usage = getattr(resp, "usage", None)
                pt = int(getattr(usage, "prompt_tokens", 0) or 0)
                ct = int(getattr(usage, "completion_tokens", 0) or 0)
                self._count(prompt_tokens=pt, completion_tokens=ct)
                return content, pt, ct
            except _Transient as exc:
                last = exc
            except openai.RateLimitError as exc:
                retry_after = None
                try:
                    retry_after = float(exc.response.headers.get("retry-after"))
                except (TypeError, ValueError, AttributeError):
                    pass
                last = _Transient(f"429 rate limited: {exc}", retry_after)
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                last = _Transient(f"{type(exc).__name__}: {exc}")
            except openai.APIStatusError as exc:
                if exc.status_code >= 500 or exc.status_code in (408, 409):
                    last = _Transient(f"HTTP {exc.status_code}: {exc}")
                elif exc.status_code in (401, 403):
                    raise InputError(f"the endpoint refused the API key (HTTP "
                                     f"{exc.status_code})", source=self.base_url,
                                     fix="check OPENAI_API_KEY / --api-key") from None
                else:
                    raise _Permanent(f"HTTP {exc.status_code}: {exc}") from None
            except (openai.APIResponseValidationError, json.JSONDecodeError, ValueError,
                    AttributeError, TypeError) as exc:
                last = _Transient(f"malformed response body: {type(exc).__name__}: {exc}")
        raise InputError(
            f"the LLM endpoint kept failing after {self.max_retries} retries ({last})",
            source=self.base_url or "api.openai.com",
            fix="check that the server runs and --base-url is right (answers received so far "
                f"are cached; rerun to resume), or {self.alternative}")


class LLMExtractor(ChatEndpoint):
    """Entities from an OpenAI-compatible chat-completions endpoint (JSON answers, cached)."""

    name = "llm-openai-compatible"
    version = "1"
    prompt_version = PROMPT_VERSION

    def __init__(self, base_url: str | None = None, model: str | None = None,
                 api_key: str | None = None, *, concurrency: int = 4, max_tokens: int = 512,
                 timeout: float = 60.0, max_retries: int = 5, backoff: float = 0.5,
                 max_backoff: float = 30.0, cache_path: str | None = None,
                 price_in: float = 0.0, price_out: float = 0.0, temperature: float = 0.0,
                 max_chars: int = 4000, reask: bool = True, retry_failed: bool = False,
                 progress: bool = False, client=None) -> None:
        super().__init__(base_url, model, api_key, max_tokens=max_tokens, timeout=timeout,
                         max_retries=max_retries, backoff=backoff, max_backoff=max_backoff,
                         price_in=price_in, price_out=price_out, temperature=temperature,
                         client=client)
        if concurrency < 1:
            raise InputError("concurrency must be >= 1", fix="e.g. --concurrency 4")
        self.concurrency = int(concurrency)
        self.max_chars = int(max_chars)
        self.reask = bool(reask)
        self.retry_failed = bool(retry_failed)
        self.progress = bool(progress)
        self.cache = AnswerCache(cache_path) if cache_path else None
        self.failures: dict[int, str] = {}

    def params(self) -> dict:
        return {"model": self.model, "prompt_version": self.prompt_version,
                "temperature": self.temperature, "max_tokens": self.max_tokens,
                "max_chars": self.max_chars}

    def _extract_one(self, text: str) -> dict:
        text = text[:self.max_chars]
        messages = [{"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": f"Document:\n{text}\n\nJSON:"}]
        record = {"prompt_tokens": 0, "completion_tokens": 0, "calls": 0}
        try:
            content, pt, ct = self._call(messages)
        except _Permanent as exc:
            return dict(record, status="failed", error=str(exc), entities=[], raw="")
        record.update(prompt_tokens=pt, completion_tokens=ct, calls=1)
        entities = parse_entities(content)
        if entities is None and self.reask:
            self._count(reasks=1)
            messages += [{"role": "assistant", "content": content},
                         {"role": "user", "content": REASK_PROMPT}]
            try:
                content2, pt2, ct2 = self._call(messages)
            except _Permanent as exc:
                return dict(record, status="failed", error=str(exc), entities=[], raw=content)
            record.update(prompt_tokens=pt + pt2, completion_tokens=ct + ct2, calls=2)
            entities = parse_entities(content2)
            content = content2
        if entities is None:
            return dict(record, status="failed", entities=[], raw=content[:2000],
                        error="malformed JSON after repair and re-ask: " + content[:200])
        return dict(record, status="ok", raw=content[:2000],
                    entities=[[e.name, e.description] for e in entities])

    # -- batch ----------------------------------------------------------------------------------
    def extract(self, texts: Sequence[str]) -> list[list[Entity]]:
        self.failures = {}
        results: list = [None] * len(texts)
        todo = []
        for i, text in enumerate(texts):
            doc_hash = hashlib.sha256(text[:self.max_chars].encode("utf-8")).hexdigest()
            key = AnswerCache.key(self.model, self.prompt_version, doc_hash)
            hit = self.cache.get(key) if self.cache else None
            if hit is not None and not (hit["status"] == "failed" and self.retry_failed):
                self._count(cached=1)
                results[i] = hit
            else:
                todo.append((i, text, key, doc_hash))
        bar = None
        if self.progress and todo:
            from tqdm.auto import tqdm
            bar = tqdm(total=len(todo), desc="llm extract", unit="doc")
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {pool.submit(self._extract_one, text): (i, key, doc_hash)
                       for i, text, key, doc_hash in todo}
            try:
                for fut in as_completed(futures):
                    i, key, doc_hash = futures[fut]
                    record = fut.result()
                    if self.cache:
                        self.cache.put(key, self.model, self.prompt_version, doc_hash, record)
                    results[i] = record
                    if bar is not None:
                        bar.update(1)
                        bar.set_postfix(tokens=self._usage["prompt_tokens"]
                                        + self._usage["completion_tokens"])
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
                self._count(failed_docs=1)
            out.append([Entity(n, d) for n, d in record["entities"]])
        return out


class _Permanent(Exception):
    """A request failure that retrying will not fix (e.g. HTTP 400)."""
