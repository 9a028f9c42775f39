"""Entity-name normalisation (stdlib only): case, punctuation, singular, abbreviations.

The same function normalises document entities and query entities, so that Jaccard alignment
compares like with like.  Rules, in order:

1. Unicode NFKC, then abbreviations the text itself defines ("low-density lipoprotein (LDL)")
   are expanded (Schwartz & Hearst 2003, "A simple algorithm for identifying abbreviation
   definitions in biomedical text");
2. lower case; punctuation other than an inner hyphen, apostrophe-free;
3. leading/trailing stop words (determiners, pronouns, vague quantifiers) are stripped;
4. the last word is made singular by suffix rules (``studies`` -> ``study``);
5. names that are empty, shorter than ``min_chars``, purely numeric, made only of stop words or
   longer than ``max_words`` are dropped (``None``).

Near-duplicate merging by embedding similarity lives in :mod:`.graph` (it needs embeddings).
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["normalise_name", "normalised_names", "normalise_entities", "find_abbreviations",
           "singular", "STOP_WORDS", "NORMALISER_VERSION"]

#: Bumped whenever a rule changes: stored in the artifact metadata.
NORMALISER_VERSION = "1"

STOP_WORDS = frozenset("""
a about above after again against all also am an and any are as at be been before being below
between both but by can could did do does doing down during each either etc few for from further
had has have having he her here hers herself him himself his how however i if in into is it its
itself just least less let like many may me might more most much must my myself neither no nor
not now of off often on once one only or other others otherwise our ours ourselves out over own
per rather same several she should since so some such than that the their theirs them themselves
then there these they this those though through thus to too toward towards under until up upon us
very via was we were what whatever when where whether which while who whom whose why will with
within without would yet you your yours yourself yourselves
""".split())

#: Vague modifiers that carry no topic: stripped from the front of a name.
VAGUE_MODIFIERS = frozenset("""
significant significantly high higher highest low lower lowest new other various different
important recent present previous total common major potential possible further large larger
small smaller certain specific particular overall main first second third similar several
numerous increased decreased reduced greater additional available current following given
""".split())

_PUNCT = re.compile(r"[^\w\s\-+/]", re.UNICODE)
_SPACES = re.compile(r"\s+")
_NUMERIC = re.compile(r"^[\d\s.,%+\-/]+$")
_PAREN = re.compile(r"\(([^()]{1,12})\)")
_INVARIANT = ("ss", "us", "is", "ics", "sis", "ous", "xis")
_PLURAL_FORMS = frozenset("""
diabetes series species herpes rabies scabies news mumps measles lens aids rickets
""".split())


_IRREGULAR = {"women": "woman", "men": "man", "children": "child", "mice": "mouse",
              "feet": "foot", "teeth": "tooth", "geese": "goose", "people": "person",
              "criteria": "criterion", "phenomena": "phenomenon", "bacteria": "bacterium"}


def singular(word: str) -> str:
    """Singular of an English noun by suffix rules (deterministic, no dictionary)."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith(_INVARIANT) or word in _PLURAL_FORMS:
        return word
    if word.endswith("yses"):
        return word[:-2] + "is"
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("ches", "shes", "xes", "sses", "zes")):
        return word[:-2]
    if word.endswith("s"):
        return word[:-1]
    return word


def _valid_short(short: str) -> bool:
    short = short.strip()
    return (2 <= len(short) <= 10 and short[0].isalnum() and any(c.isalpha() for c in short)
            and len(short.split()) <= 2 and any(c.isupper() for c in short))


def _match_long(short: str, words: list[str]) -> str | None:
    """Schwartz-Hearst: the shortest tail of ``words`` whose characters cover ``short``."""
    text = " ".join(words)
    s, t = len(short) - 1, len(text) - 1
    while s >= 0:
        c = short[s].lower()
        if not c.isalnum():
            s -= 1
            continue
        while t >= 0 and (text[t].lower() != c or (s == 0 and t > 0 and text[t - 1].isalnum())):
            t -= 1
        if t < 0:
            return None
        s -= 1
        t -= 1
    start = text.rfind(" ", 0, t + 1) + 1
    long = text[start:].strip()
    if len(long) <= len(short) or long.lower() == short.lower():
        return None
    return long


def find_abbreviations(text: str) -> dict[str, str]:
    """Abbreviations defined in ``text`` as ``long form (SHORT)``: ``{SHORT: long form}``.

    The first definition of a short form wins.
    """
    out: dict[str, str] = {}
    for match in _PAREN.finditer(text):
        short = match.group(1).strip()
        if not _valid_short(short) or short in out:
            continue
        before = text[:match.start()].rstrip()
        cut = max(before.rfind(". "), before.rfind("; "), before.rfind("("), before.rfind(")"))
        before = before[cut + 1:] if cut >= 0 else before
        words = before.split()
        n = len(short)
        words = words[-min(n + 5, 2 * n):]
        if not words:
            continue
        long = _match_long(short, words)
        if long:
            out[short] = long.strip(" ,;:")
    return out


def _expand(name: str, abbreviations: dict[str, str]) -> str:
    if not abbreviations:
        return name
    stripped = _PAREN.sub(lambda m: "" if m.group(1).strip() in abbreviations else m.group(0),
                          name).strip()
    tokens = stripped.split()
    expanded = [abbreviations.get(tok.strip(",;:."), tok) for tok in tokens]
    return " ".join(expanded)


def normalise_name(name: str, abbreviations: dict[str, str] | None = None, *,
                   min_chars: int = 3, max_words: int = 6) -> str | None:
    """The normalised form of an entity name, or ``None`` when nothing meaningful is left."""
    text = unicodedata.normalize("NFKC", name)
    text = _expand(text, abbreviations or {})
    text = text.lower().replace("’", "'").replace("'s ", " ").replace("s' ", "s ")
    if text.endswith("'s"):
        text = text[:-2]
    text = _PUNCT.sub(" ", text)
    words = [w.strip("-+/") for w in _SPACES.split(text)]
    words = [w for w in words if w]
    while words and (words[0] in STOP_WORDS or words[0] in VAGUE_MODIFIERS
                     or _NUMERIC.match(words[0])):
        words.pop(0)
    while words and (words[-1] in STOP_WORDS or _NUMERIC.match(words[-1])):
        words.pop()
    if not words or len(words) > max_words:
        return None
    words[-1] = singular(words[-1])
    out = " ".join(words)
    if len(out) < min_chars or _NUMERIC.match(out) or all(w in STOP_WORDS for w in words):
        return None
    return out


def normalised_names(raw, abbreviations: dict, *, min_chars: int = 3,
                     max_words: int = 6) -> dict:
    """``{normalised name: description}`` of raw entities, in order of first occurrence (the
    first description of a name is kept).  Documents (the pipeline) and queries (the
    artifact's extractor) go through exactly this."""
    seen: dict = {}
    for ent in raw:
        name = normalise_name(ent.name, abbreviations, min_chars=min_chars, max_words=max_words)
        if name is not None and name not in seen:
            seen[name] = ent.description
    return seen


def normalise_entities(raw, abbreviations: dict, params: dict, stop=()) -> list[str]:
    """Distinct normalised names of raw entities (minus ``stop``), in order of first occurrence;
    ``params`` holds the pipeline's ``min_chars`` and ``max_words``."""
    names = normalised_names(raw, abbreviations, min_chars=params.get("min_chars", 3),
                             max_words=params.get("max_words", 6))
    stop = set(stop)
    return [n for n in names if n not in stop]
