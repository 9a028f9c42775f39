"""Measures as immutable value objects, named in ir_measures syntax.

``parse_measure("nDCG@10")`` returns ``nDCG@10``; ``repr`` of a measure is its canonical name, and
``parse_measure(repr(m)) == m`` for every measure.  Parameters use ir_measures' spelling:
``nDCG(dcg='exp-log2')@10`` (exponential gain), ``P(rel=2)@10`` (relevance threshold).
Computation lives in :mod:`mteb_stratified.core.kernels`, not here.

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

from .arrays import MAX_GRADE
from .errors import InputError

__all__ = ["Measure", "parse_measure", "parse_measures", "MEASURE_NAMES", "MAX_CUTOFF",
           "nDCG", "RR", "R", "P", "AP", "Success"]


@dataclass(frozen=True)
class _Spec:
    cutoff: str  # "optional" | "required"
    params: Mapping[str, tuple]  # name -> allowed values (empty tuple = any int >= 0)
    defaults: Mapping[str, object]


_SPECS: dict[str, _Spec] = {
    "nDCG": _Spec("optional", {"dcg": ("log2", "exp-log2")}, {"dcg": "log2"}),
    "RR": _Spec("optional", {"rel": ()}, {}),
    "R": _Spec("required", {"rel": ()}, {}),
    "P": _Spec("required", {"rel": ()}, {}),
    "AP": _Spec("optional", {"rel": ()}, {}),
    "Success": _Spec("required", {"rel": ()}, {}),
}
_ALIASES = {"MRR": "RR", "Recall": "R", "Precision": "P", "MAP": "AP", "NDCG": "nDCG",
            "ndcg": "nDCG", "mrr": "RR", "map": "AP", "recall": "R", "precision": "P",
            "success": "Success"}
MEASURE_NAMES: tuple[str, ...] = tuple(_SPECS)
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
        spec = _SPECS.get(name)
        if spec is None:
            raise _unknown(self.name)
        object.__setattr__(self, "name", name)
        if self.cutoff is not None:
            if (isinstance(self.cutoff, bool) or not isinstance(self.cutoff, int)
                    or not 1 <= self.cutoff <= MAX_CUTOFF):
                shown = repr(self.cutoff)
                shown = shown if len(shown) <= 24 else f"{shown[:12]}... ({len(shown)} digits)"
                raise InputError(f"cutoff of {name} must be an integer in [1, {MAX_CUTOFF}], "
                                 f"got {shown}", fix=_CUTOFF_FIX.format(name=name))
        elif spec.cutoff == "required":
            raise InputError(f"{name} needs a cutoff", fix=f"write e.g. {name}@10")
        params = dict(self.params)
        for key, value in list(params.items()):
            if key not in spec.params:
                allowed = ", ".join(spec.params) or "none"
                raise InputError(f"{name} has no parameter {key!r}",
                                 fix=f"parameters of {name}: {allowed}")
            choices = spec.params[key]
            if choices and value not in choices:
                raise InputError(f"{name}({key}={value!r}) is not valid",
                                 fix=f"{key} is one of {', '.join(map(repr, choices))}")
            if not choices and (isinstance(value, bool) or not isinstance(value, int)):
                raise InputError(f"{name}({key}={repr(value)[:40]}) must be an integer",
                                 fix=f"write e.g. {name}({key}=2)@10")
            if not choices and abs(value) > MAX_GRADE:
                raise InputError(f"{name}({key}={str(value)[:40]}) is beyond the grade bound "
                                 f"±{MAX_GRADE}", fix=f"write e.g. {name}({key}=2)@10")
            if spec.defaults.get(key, object()) == value:
                del params[key]
        object.__setattr__(self, "params", tuple(sorted(params.items())))

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

    def param(self, key: str, default: object = None) -> object:
        """The value of parameter ``key`` (its default when not set)."""
        return dict(self.params).get(key, _SPECS[self.name].defaults.get(key, default))


#: trec_eval / pytrec_eval measure families -> ours (``ndcg_cut`` + ``_10`` -> ``nDCG@10``);
#: the cutoff families first.  Used for suggestions here and by :mod:`mteb_stratified.naming`.
TREC_EVAL_FAMILIES = {"ndcg_cut": "nDCG", "P": "P", "recall": "R", "map_cut": "AP",
                      "success": "Success", "ndcg": "nDCG", "map": "AP", "recip_rank": "RR"}
_TREC_SYNTAX = re.compile(r"^(ndcg_cut|ndcg|P|recall|map_cut|map|recip_rank|success)"
                          r"(?:[_.](\d+))?$")


def _suggestions(name: str) -> list[str]:
    """Valid names close to ``name``: its ir_measures form when it is a trec_eval name, else
    the closest of the documented examples (each one parses)."""
    m = _TREC_SYNTAX.match(name.strip())
    if m:
        base, k = TREC_EVAL_FAMILIES[m.group(1)], m.group(2)
        if k is None and _SPECS[base].cutoff == "required":
            k = "10"
        return [f"{base}@{k}" if k is not None else base]
    parts = _SYNTAX.match(name)
    if parts is None:
        return difflib.get_close_matches(name, list(_EXAMPLES), n=3, cutoff=0.3)
    head, params, k = parts.groups()
    out = []
    for close in difflib.get_close_matches(head, [*MEASURE_NAMES, *_ALIASES], n=3, cutoff=0.4):
        spec = _SPECS[_ALIASES.get(close, close)]
        cut = k if k is not None else ("10" if spec.cutoff == "required" else None)
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
    if canonical not in _SPECS:
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
    if cutoff is None and _SPECS[canonical].cutoff == "required":
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
