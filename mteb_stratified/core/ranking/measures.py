"""Measures as immutable value objects, named in ir_measures syntax, and one spec per family.

``parse_measure("nDCG@10")`` returns ``nDCG@10``; ``repr`` of a measure is its canonical name, and
``parse_measure(repr(m)) == m`` for every measure.  Parameters use ir_measures' spelling:
``nDCG(dcg='exp-log2')@10`` (exponential gain), ``P(rel=2)@10`` (relevance threshold).

Everything about a family sits in one :class:`MeasureFamily` of :data:`FAMILIES`: how it parses
(aliases, cutoff, parameters), how it is computed (its contribution kernel of
:mod:`mteb_stratified.core.ranking.kernels` and its normalisation) and its names elsewhere
(trec_eval, MTEB, BEIR, the precision sweep; :mod:`mteb_stratified.naming` reads them).  To add a
measure,
add its family here and its kernel, when new, in ``kernels.py`` and in ``_walk.c`` (an
enumerator of ``enum walk_kind``, named and numbered as the family's :class:`WalkKind`: a test
compares the two).

========  ==========================================  ===============  =================
name      meaning                                      cutoff           trec_eval name
========  ==========================================  ===============  =================
nDCG      normalised discounted cumulative gain       optional         ndcg / ndcg_cut.k
RR        reciprocal rank (alias ``MRR``)             optional         recip_rank
R         recall (alias ``Recall``)                   required         recall.k
P         precision (alias ``Precision``)             required         P.k
AP        average precision (alias ``MAP``)           optional         map / map_cut.k
Success   1 if a relevant document is in the top k    required         success.k
========  ==========================================  ===============  =================
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from ..options import MAX_GRADE
from ..errors import InputError

__all__ = ["Measure", "MeasureFamily", "WalkKind", "FAMILIES", "WALK_KINDS", "walk_code",
           "parse_measure", "parse_measures", "MEASURE_NAMES", "MAX_CUTOFF", "TREC_EVAL_FAMILIES",
           "nDCG", "RR", "R", "P", "AP", "Success"]


@dataclass(frozen=True)
class WalkKind:
    """A kind of the compiled walk: one enumerator of ``enum walk_kind`` in ``_walk.c``, its name
    there and its value, which selects the contribution a family's sums use in C."""

    name: str
    code: int


#: The compiled walk's kinds by name, as ``enum walk_kind`` of ``_walk.c`` numbers them (a test
#: parses the C source and compares); the families below hold them.
WALK_KINDS: dict[str, WalkKind] = {k.name: k for k in (
    WalkKind("DCG_LINEAR", 0), WalkKind("DCG_EXP", 1), WalkKind("HITS", 2), WalkKind("AP", 3),
    WalkKind("RR", 4), WalkKind("FIRST", 5))}


@dataclass(frozen=True)
class MeasureFamily:
    """One measure family (``nDCG``, ``RR``, ...): its parser, its kernel and its names.

    A measure's value is ``Σ_{p≤k} c(p) / norm``, the per-position contribution ``c`` summed over
    the first k positions (all of them without a cutoff) and divided by a normaliser (a divisor
    0 gives 0); the formulas of ``c`` are in :mod:`mteb_stratified.core.ranking.kernels`.

    Attributes
    ----------
    name : the ir_measures name, canonical (``"nDCG"``).
    aliases : other spellings the parser takes for ``name`` (``"MRR"`` for ``"RR"``).
    cutoff : ``"optional"`` or ``"required"``.
    params : parameter -> allowed values (an empty tuple: any integer grade within ±MAX_GRADE).
    defaults : parameter -> its default (a parameter at its default is not stored).
    kernel : the contribution ``c(p)``: ``"dcg"`` gain(p)·d(p), ``"hits"`` rel(p),
        ``"ap"`` rel(p)·hits(p)/p, ``"rr"`` [p = p₁]/p, ``"first"`` [p = p₁].
    variant : the parameter that selects the kernel's variant: ``"dcg"`` (the gain) or
        ``"rel"`` (the relevance level; the evaluation's ``relevance_level`` when not set).
    norm : the normaliser: ``"ideal"`` (IDCG@k), ``"k"`` (the cutoff), ``"rel"`` (R, the
        judged relevant documents) or ``"none"``.
    walk : the compiled walk's kind (:class:`WalkKind`) of the kernel, or a mapping from the
        variant parameter's values to kinds when the value selects the kernel's code (the gain
        of ``dcg``); :meth:`walk_code` reads it.
    trec_eval : trec_eval's (pytrec_eval's) family with a cutoff (``"ndcg_cut"``: ``ndcg_cut_10``),
        or None.
    trec_eval_whole : trec_eval's family without a cutoff (``"ndcg"``), or None.
    mteb : MTEB's key family (``"ndcg"``: ``ndcg_at_10``).
    mteb_reported : whether an MTEB retrieval task reports the family (at its ``k_values``).
    beir : BEIR's key family (``"NDCG"``: ``NDCG@10``), or None when BEIR does not report it.
    sweep : the precision sweep's field prefix (``"ndcg"``: ``ndcg10_expected``).
    """

    name: str
    aliases: tuple[str, ...]
    cutoff: str
    params: Mapping[str, tuple]
    defaults: Mapping[str, object]
    kernel: str
    variant: str
    norm: str
    walk: "WalkKind | Mapping[object, WalkKind]"
    trec_eval: str | None
    trec_eval_whole: str | None
    mteb: str
    mteb_reported: bool
    beir: str | None
    sweep: str

    def walk_kinds(self) -> tuple[WalkKind, ...]:
        """Every kind of the compiled walk this family can use."""
        return (self.walk,) if isinstance(self.walk, WalkKind) else tuple(self.walk.values())

    def walk_code(self, variant: object) -> int:
        """The compiled walk's kind code of this family's kernel with its variant parameter
        (:attr:`variant`) at ``variant``."""
        return (self.walk if isinstance(self.walk, WalkKind) else self.walk[variant]).code

    def check_params(self, params: Mapping[str, object]) -> tuple[tuple[str, object], ...]:
        """The parameters that differ from their defaults, sorted by name; an
        :class:`InputError` for a parameter the family does not take or a value it does not
        allow."""
        kept = dict(params)
        for key, value in params.items():
            if key not in self.params:
                allowed = ", ".join(self.params) or "none"
                raise InputError(f"{self.name} has no parameter {key!r}",
                                 fix=f"parameters of {self.name}: {allowed}")
            choices = self.params[key]
            if choices and value not in choices:
                raise InputError(f"{self.name}({key}={value!r}) is not valid",
                                 fix=f"{key} is one of {', '.join(map(repr, choices))}")
            if not choices and (isinstance(value, bool) or not isinstance(value, int)):
                raise InputError(f"{self.name}({key}={repr(value)[:40]}) must be an integer",
                                 fix=f"write e.g. {self.name}({key}=2)@10")
            if not choices and abs(value) > MAX_GRADE:
                raise InputError(f"{self.name}({key}={str(value)[:40]}) is beyond the grade "
                                 f"bound ±{MAX_GRADE}", fix=f"write e.g. {self.name}({key}=2)@10")
            if self.defaults.get(key, object()) == value:
                del kept[key]
        return tuple(sorted(kept.items()))


_REL = {"rel": ()}
#: The families, in MTEB's order (ndcg, mrr, recall, precision, map), then Success.
FAMILIES: dict[str, MeasureFamily] = {f.name: f for f in (
    MeasureFamily("nDCG", ("NDCG", "ndcg"), "optional", {"dcg": ("log2", "exp-log2")},
                  {"dcg": "log2"}, kernel="dcg", variant="dcg", norm="ideal",
                  walk={"log2": WALK_KINDS["DCG_LINEAR"], "exp-log2": WALK_KINDS["DCG_EXP"]},
                  trec_eval="ndcg_cut", trec_eval_whole="ndcg", mteb="ndcg",
                  mteb_reported=True, beir="NDCG", sweep="ndcg"),
    MeasureFamily("RR", ("MRR", "mrr"), "optional", _REL, {}, kernel="rr", variant="rel",
                  norm="none", walk=WALK_KINDS["RR"], trec_eval=None,
                  trec_eval_whole="recip_rank", mteb="mrr", mteb_reported=True, beir="MRR",
                  sweep="rr"),
    MeasureFamily("R", ("Recall", "recall"), "required", _REL, {}, kernel="hits",
                  variant="rel", norm="rel", walk=WALK_KINDS["HITS"], trec_eval="recall",
                  trec_eval_whole=None, mteb="recall", mteb_reported=True, beir="Recall",
                  sweep="r"),
    MeasureFamily("P", ("Precision", "precision"), "required", _REL, {}, kernel="hits",
                  variant="rel", norm="k", walk=WALK_KINDS["HITS"], trec_eval="P",
                  trec_eval_whole=None, mteb="precision", mteb_reported=True, beir="P",
                  sweep="p"),
    MeasureFamily("AP", ("MAP", "map"), "optional", _REL, {}, kernel="ap", variant="rel",
                  norm="rel", walk=WALK_KINDS["AP"], trec_eval="map_cut",
                  trec_eval_whole="map", mteb="map", mteb_reported=True, beir="MAP",
                  sweep="ap"),
    MeasureFamily("Success", ("success",), "required", _REL, {}, kernel="first",
                  variant="rel", norm="none", walk=WALK_KINDS["FIRST"], trec_eval="success",
                  trec_eval_whole=None, mteb="success", mteb_reported=False, beir=None,
                  sweep="success"),
)}
_ALIASES = {alias: f.name for f in FAMILIES.values() for alias in f.aliases}
_BY_KERNEL = {f.kernel: f for f in FAMILIES.values()}


def walk_code(kernel: str, variant: object) -> int:
    """The compiled walk's kind code of the contribution ``(kernel, variant)`` (the key the
    kernels and the walk take: ``("dcg", "exp-log2")``, ``("hits", 1)``), read from the spec of
    a family with that kernel (families that share a kernel share its kinds: a test checks)."""
    return _BY_KERNEL[kernel].walk_code(variant)


MEASURE_NAMES: tuple[str, ...] = tuple(FAMILIES)
_EXAMPLES = ("nDCG@10", "nDCG", "RR@10", "RR", "MRR@10", "R@100", "P@10", "AP@100", "AP",
             "Success@1", "nDCG(dcg='exp-log2')@10", "P(rel=2)@10")
#: The largest cutoff, 10**18: a cutoff beyond a ranking's length is the whole ranking (any
#: such cutoff is valid and exact), but one beyond the kernels' int64 cannot be represented.
MAX_CUTOFF = 10**18
_CUTOFF_FIX = ("write e.g. {name}@10; a cutoff beyond the ranking's length counts the whole "
               "ranking, so @1000 covers any run of depth 1000")
_SYNTAX = re.compile(r"^\s*([A-Za-z_]+)\s*(?:\((.*)\))?\s*(?:@\s*(\S+))?\s*$")


@dataclass(frozen=True, eq=True)
class Measure:
    """One retrieval measure: a name, an optional cutoff ``k`` and keyword parameters.

    Parameters are stored only when they differ from the default, so ``nDCG(dcg='log2')@10``
    and ``nDCG@10`` are the same value.  ``measure @ k`` returns the measure with cutoff ``k``.
    """

    name: str
    cutoff: int | None = None
    params: tuple[tuple[str, object], ...] = field(default=())

    def __post_init__(self) -> None:
        name = _ALIASES.get(self.name, self.name)
        family = FAMILIES.get(name)
        if family is None:
            raise _unknown(self.name)
        object.__setattr__(self, "name", name)
        if self.cutoff is not None:
            if (isinstance(self.cutoff, bool) or not isinstance(self.cutoff, int)
                    or not 1 <= self.cutoff <= MAX_CUTOFF):
                shown = repr(self.cutoff)
                shown = shown if len(shown) <= 24 else f"{shown[:12]}... ({len(shown)} digits)"
                raise InputError(f"cutoff of {name} must be an integer in [1, {MAX_CUTOFF}], "
                                 f"got {shown}", fix=_CUTOFF_FIX.format(name=name))
        elif family.cutoff == "required":
            raise InputError(f"{name} needs a cutoff", fix=f"write e.g. {name}@10")
        object.__setattr__(self, "params", family.check_params(dict(self.params)))

    # -- value-object behaviour -------------------------------------------------------------
    def __repr__(self) -> str:
        text = self.name
        if self.params:
            text += "(" + ",".join(f"{k}={v!r}" for k, v in self.params) + ")"
        if self.cutoff is not None:
            text += f"@{self.cutoff}"
        return text

    __str__ = __repr__

    def __matmul__(self, k: int) -> "Measure":
        return Measure(self.name, k, self.params)

    def __call__(self, **params: object) -> "Measure":
        return Measure(self.name, self.cutoff, tuple({**dict(self.params), **params}.items()))

    @property
    def family(self) -> MeasureFamily:
        """The measure's :class:`MeasureFamily` (its kernel and its names)."""
        return FAMILIES[self.name]

    def param(self, key: str, default: object = None) -> object:
        """The value of parameter ``key`` (its default when not set)."""
        return dict(self.params).get(key, FAMILIES[self.name].defaults.get(key, default))


#: trec_eval / pytrec_eval measure families -> ours (``ndcg_cut`` + ``_10`` -> ``nDCG@10``);
#: the cutoff families first.  Used for suggestions here and by :mod:`mteb_stratified.naming`.
TREC_EVAL_FAMILIES = {**{f.trec_eval: f.name for f in FAMILIES.values() if f.trec_eval},
                      **{f.trec_eval_whole: f.name for f in FAMILIES.values() if f.trec_eval_whole}}
_TREC_SYNTAX = re.compile("^(" + "|".join(sorted(TREC_EVAL_FAMILIES, key=len, reverse=True))
                          + r")(?:[_.](\d+))?$")


def _suggestions(name: str) -> list[str]:
    """Valid names close to ``name``: its ir_measures form when it is a trec_eval name, else
    the closest of the documented examples (each one parses)."""
    m = _TREC_SYNTAX.match(name.strip())
    if m:
        base, k = TREC_EVAL_FAMILIES[m.group(1)], m.group(2)
        if k is None and FAMILIES[base].cutoff == "required":
            k = "10"
        return [f"{base}@{k}" if k is not None else base]
    parts = _SYNTAX.match(name)
    if parts is None:
        return difflib.get_close_matches(name, list(_EXAMPLES), n=3, cutoff=0.3)
    head, params, k = parts.groups()
    out = []
    for close in difflib.get_close_matches(head, [*MEASURE_NAMES, *_ALIASES], n=3, cutoff=0.4):
        family = FAMILIES[_ALIASES.get(close, close)]
        cut = k if k is not None else ("10" if family.cutoff == "required" else None)
        text = close + (f"({params})" if params else "") + (f"@{cut}" if cut else "")
        try:
            parse_measure(text)
        except InputError:
            text = close + (f"@{cut}" if cut else "")  # drop parameters it does not take
        out.append(text)
    return list(dict.fromkeys(out))


def _unknown(name: str) -> InputError:
    close = _suggestions(name)
    hint = f"did you mean {', '.join(close)}? " if close else ""
    return InputError(f"unknown measure {name!r}",
                      fix=f"{hint}valid measures: {', '.join(_EXAMPLES)}")


def parse_measure(text: "str | Measure") -> Measure:
    """Parse an ir_measures-style name such as ``nDCG@10`` or ``P(rel=2)@5`` into a Measure."""
    if isinstance(text, Measure):
        return text
    if not isinstance(text, str):
        raise InputError(f"a measure must be a string such as 'nDCG@10', got {type(text).__name__}")
    match = _SYNTAX.match(text)
    if match is None:
        raise _unknown(text)
    name, params_text, cutoff_text = match.groups()
    canonical = _ALIASES.get(name, name)
    if canonical not in FAMILIES:
        raise _unknown(text)
    params: dict[str, object] = {}
    if params_text:
        for part in params_text.split(","):
            key, sep, value = part.partition("=")
            if not sep:
                raise InputError(f"cannot read parameter {part.strip()!r} in {text!r}",
                                 fix=f"write parameters as key=value, e.g. {canonical}(rel=2)@10")
            try:
                params[key.strip()] = ast.literal_eval(value.strip())
            except (ValueError, SyntaxError):
                params[key.strip()] = value.strip()
    cutoff = None
    if cutoff_text is not None:
        # ASCII digits only: str.isdigit() also accepts e.g. '²', which int() rejects; the
        # length is checked before int() reads it
        if (not (cutoff_text.isascii() and cutoff_text.isdigit())
                or len(cutoff_text.lstrip("0")) > len(str(MAX_CUTOFF))
                or not 1 <= int(cutoff_text) <= MAX_CUTOFF):
            shown = cutoff_text if len(cutoff_text) <= 24 else (
                f"{cutoff_text[:12]}... ({len(cutoff_text)} characters)")
            raise InputError(f"cutoff {shown!r} in {text[:60]!r} is not an integer in "
                             f"[1, {MAX_CUTOFF}]", fix=_CUTOFF_FIX.format(name=canonical))
        cutoff = int(cutoff_text)
    if cutoff is None and FAMILIES[canonical].cutoff == "required":
        raise InputError(f"{canonical} needs a cutoff", fix=f"write e.g. {canonical}@10")
    return Measure(canonical, cutoff, tuple(params.items()))


def parse_measures(items: "Iterable[str | Measure] | str") -> tuple[Measure, ...]:
    """Parse several measures; duplicates are an error (they would be reported twice)."""
    if isinstance(items, (str, Measure)):
        items = [items]
    out: list[Measure] = []
    for item in items:
        measure = parse_measure(item)
        if measure in out:
            raise InputError(f"measure {measure!r} is listed twice", fix="list each measure once")
        out.append(measure)
    if not out:
        raise InputError("no measures given", fix="name at least one, e.g. nDCG@10")
    return tuple(out)


nDCG = Measure("nDCG")
RR = Measure("RR")
AP = Measure("AP")


class _CutoffOnly:
    """Placeholder for measures that need a cutoff: ``R@100`` builds ``Measure('R', 100)``."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __matmul__(self, k: int) -> Measure:
        return Measure(self._name, k)

    def __call__(self, **params: object) -> "_CutoffOnlyWithParams":
        return _CutoffOnlyWithParams(self._name, params)

    def __repr__(self) -> str:
        return f"{self._name}@k"


class _CutoffOnlyWithParams(_CutoffOnly):
    def __init__(self, name: str, params: dict) -> None:
        super().__init__(name)
        self._params = params

    def __matmul__(self, k: int) -> Measure:
        return Measure(self._name, k, tuple(self._params.items()))


R = _CutoffOnly("R")
P = _CutoffOnly("P")
Success = _CutoffOnly("Success")
