"""One transport for every LLM call: endpoint (retries, error mapping, usage), the OpenAI
provider, one answer cache and the JSON repair.

Layer: above :mod:`mteb_stratified.io`, below :mod:`mteb_stratified.structure` (the LLM entity
extractor) and :mod:`mteb_stratified.generation` (query writer, judge, verifier).

* :mod:`.endpoint` — :class:`ChatEndpoint`, :func:`ask_json` (the one re-ask path) and
  :func:`resolve_settings` (the one reader of ``OPENAI_*``);
* :mod:`.transport` — what a provider returns and raises;
* :mod:`.openai_provider` — the OpenAI-compatible provider (the default; each answer's body is
  bounded, ``DEFAULT_MAX_ANSWER_BYTES`` unless told, counted as it is read);
* :mod:`.cache` — :class:`AnswerCache`, the one crash-safe SQLite cache (a damaged file is set
  aside and rebuilt from its readable records on open; ``retry_failed`` clears failures);
* :mod:`.json_repair` — :func:`repair_json`.

To add a provider: implement ``complete(...)`` as :mod:`.openai_provider` does and pass it as
``ChatEndpoint(provider=...)``.
"""

from .cache import AnswerCache, cache_key
from .endpoint import DEFAULT_REASK, ChatEndpoint, ask_json, resolve_settings
from .json_repair import repair_json
from .transport import (DEFAULT_MAX_ANSWER_BYTES, Completion, Misconfigured, Permanent, Refused,
                        TooLarge, Transient)

__all__ = ["AnswerCache", "cache_key", "ChatEndpoint", "ask_json", "resolve_settings",
           "DEFAULT_REASK", "repair_json", "Completion", "Permanent", "Refused", "Misconfigured",
           "Transient", "TooLarge", "DEFAULT_MAX_ANSWER_BYTES"]
