r"""The tie walk: every measure family at every cutoff, in four arrangements, in one pass.

Input: a window of each row sorted by score (descending; equal scores form a tie group), the
grades in that order and in the tie-oblivious order, and the number of real entries per row.
Output: for every family f and cutoff k, the sums ``Σ_{p≤k} c(p)`` of the per-position
contributions (formulas in :mod:`mteb_stratified.core.ranking.kernels`) under four arrangements:

* ``E``: the expectation over all orders of each tie group;
* ``min`` / ``max``: lowest / highest grades first inside each group (the worst / best case);
* ``oblivious``: the given tie-oblivious order;

and the tie audit at each audit cutoff (groups reaching into the top k, the documents in them,
the largest of them).

Two implementations compute the same sums with the same floating-point operations in the same
order, summing positions left to right: :func:`numpy_walk` (vectorised over the rows of a
window that :mod:`mteb_stratified.core.ranking.evaluate` selected and sorted with numpy) and
:func:`compiled_evaluate`, which runs ``_walk.c`` (built with the package, loaded with ctypes,
its arguments in one struct, :class:`WalkArgs`) over whole rows: one pass, one selection, one
window sort and one walk per row, with the normalisers (relevant counts, ideal DCG), the
normalisations and the truncated-tie flags in the same pass.  The oblivious values agree bit
for bit; the others to the rounding of the group totals (1e-12).  ``kernel="auto"`` uses the
compiled path when it was built, else numpy.
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.util
from typing import Sequence

import numpy as np

from ..errors import InputError
from .kernels import (GAIN_KERNEL, arrange_within_groups, at_cutoffs,
                      deterministic_contributions, expected_contributions)
from .measures import walk_code
from .results import ARRANGEMENT_KEYS
from .ties import tie_groups

__all__ = ["numpy_walk", "compiled_evaluate", "compiled_available", "KERNELS", "ARRANGEMENTS",
           "NORMS", "WalkArgs"]

KERNELS = ("auto", "compiled", "numpy")
#: The arrangements, in the order of the walk's output axis (an alias of
#: :data:`mteb_stratified.core.ranking.results.ARRANGEMENT_KEYS`, their owner).
ARRANGEMENTS = ARRANGEMENT_KEYS


def numpy_walk(s: np.ndarray, g: np.ndarray, go: np.ndarray, m: np.ndarray, disc: np.ndarray,
               families: Sequence[tuple], cuts: Sequence[int], acuts: Sequence[int],
               ) -> tuple[np.ndarray, np.ndarray]:
    """The walk vectorised over the rows of a window.

    Parameters
    ----------
    s : (Q, W) float64 scores, each row sorted descending; positions ``≥ m`` are padding
        (``-inf``), never equal to a real score.
    g, go : (Q, W) grades in the order of ``s`` and in the tie-oblivious order (``go is g``
        when the two orders coincide); ``-inf`` for unjudged documents and padding.
    m : (Q,) int64 real entries per row.
    disc : discounts ``1/log2(p+1)``, at least W of them.
    families : ``("dcg", "log2" | "exp-log2")`` or ``("hits" | "ap" | "rr" | "first", level)``.
    cuts, acuts : cutoffs (ascending, ≥ 1) of the sums and of the tie audit; a cutoff beyond
        the window sums the whole row.

    Returns
    -------
    sums : (F, C, 4, Q) float64, the arrangements in the order of :data:`ARRANGEMENTS`.
    audit : (3, A, Q) int64: tie groups reaching into the top k, documents in them, largest.
    """
    q, w = s.shape
    disc = disc[:w]
    groups = tie_groups(s)
    fams = set(families)
    real = np.arange(w) < m[:, None]
    arrangements = [expected_contributions(g, groups, fams, disc)]
    if bool(np.any((groups.size > 1) & real)):
        worst, best = arrange_within_groups(g, groups)
        arrangements += [deterministic_contributions(worst, fams, disc),
                         deterministic_contributions(best, fams, disc)]
    else:
        arrangements += [deterministic_contributions(g, fams, disc)] * 2
    arrangements.append(arrangements[1] if go is g and arrangements[1] is arrangements[2]
                        else deterministic_contributions(go, fams, disc))
    out = np.zeros((len(families), len(cuts), 4, q))
    for f, fam in enumerate(families):
        for a, contrib in enumerate(arrangements):
            out[f, :, a, :] = at_cutoffs(contrib[fam], cuts).T
    audit = np.zeros((3, len(acuts), q), dtype=np.int64)
    starts = groups.is_start & real
    rows = np.arange(q)
    for j, k in enumerate(acuts):
        kk = np.minimum(k, m)
        inside = np.arange(w) < kk[:, None]
        audit[0, j] = (starts & inside).sum(axis=1)
        if w:
            audit[1, j] = np.where(kk > 0, groups.end[rows, np.maximum(kk - 1, 0)] + 1, 0)
        audit[2, j] = np.where(inside, groups.size, 0).max(axis=1, initial=0)
    return out, audit


_compiled = None  # the loaded C function, or False when it is not built (set on first use)
# dtype of the grades -> ``enum grade_type`` of _walk.c (G_F64, G_F32, G_I8, ...: a test compares)
_GRADE_TYPES = {np.dtype(np.float64): 0, np.dtype(np.float32): 1, np.dtype(np.int8): 2,
                np.dtype(np.int16): 3, np.dtype(np.int32): 4, np.dtype(np.int64): 5,
                np.dtype(np.uint8): 6}


_I64, _PTR = ctypes.c_int64, ctypes.c_void_p


class WalkArgs(ctypes.Structure):
    """The arguments of ``evaluate_rows``: ``walk_args`` of ``_walk.c``, the same fields in the
    same order (a test parses the C definition and compares); its comments say what each is."""

    _fields_ = [("q", _I64), ("n", _I64), ("scores", _PTR), ("f32", _I64), ("grades", _PTR),
                ("gtype", _I64), ("tiebreak", _PTR), ("nc", _PTR), ("qg", _PTR), ("nj", _I64),
                ("ideal_cands", _I64), ("input_order", _I64), ("depth", _I64), ("disc", _PTR),
                ("inv", _PTR), ("nf", _I64), ("kind", _PTR), ("level", _PTR), ("nc_", _I64),
                ("cut", _PTR), ("na", _I64), ("acut", _PTR), ("nl", _I64), ("levels", _PTR),
                ("nd", _I64), ("dcgs", _PTR), ("nic", _I64), ("icut", _PTR), ("nm", _I64),
                ("mfam", _PTR), ("mcut", _PTR), ("mnorm", _PTR), ("marg", _PTR), ("mk", _PTR),
                ("res", _PTR), ("audit", _PTR), ("trunc", _PTR), ("nrel", _PTR)]


def _load():
    """The compiled function, opened on first use; False when it was not built, does not load
    or is stale (:func:`_open_compiled`): the numpy path then computes the same values."""
    global _compiled, _compiled_why
    if _compiled is None:
        fn, _compiled_why = _open_compiled()
        _compiled = fn or False
    return _compiled


#: Why the compiled walk is not used (set by :func:`_load`; None when it is).
_compiled_why: str | None = None
#: :class:`WalkArgs`' field names in order, as ``_walk.c``'s ``walk_layout()`` returns them.
_LAYOUT = ",".join(name for name, _ in WalkArgs._fields_)


def _open_compiled() -> tuple:
    """``(evaluate_rows, None)`` of the built ``_walk`` extension, or ``(None, why)`` when
    there is none, it does not load, or it was built from another version of ``_walk.c`` (its
    ``walk_layout()`` is not :class:`WalkArgs`' fields in order, or its struct's size
    differs)."""
    spec = importlib.util.find_spec("mteb_stratified.core.ranking._walk")
    if spec is None or not spec.origin or not spec.origin.endswith(
            tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        return None, "missing"
    try:
        lib = ctypes.CDLL(spec.origin)
        fn, size, layout = lib.evaluate_rows, lib.walk_args_size, lib.walk_layout
    except OSError:
        return None, "missing"
    except AttributeError:  # a build from before the struct argument
        return None, "stale"
    size.argtypes, size.restype = [], ctypes.c_int64
    layout.argtypes, layout.restype = [], ctypes.c_char_p
    if size() != ctypes.sizeof(WalkArgs) or layout().decode("ascii") != _LAYOUT:
        return None, "stale"
    fn.argtypes = [ctypes.POINTER(WalkArgs)]
    fn.restype = ctypes.c_int
    return fn, None


def compiled_available() -> bool:
    """Whether the compiled walk was built with the package (``pip install`` compiles it)."""
    return bool(_load())


#: Normalisations of the measures (``MeasureFamily.norm`` names the key; ``enum walk_norm`` of
#: ``_walk.c`` the code, as ``NORM_`` + the key in capitals: a test compares): none (RR,
#: Success), by the ideal DCG (nDCG), by the cutoff (P), by the relevant count (R, AP); a
#: divisor 0 gives 0.
NORMS = {"none": 0, "ideal": 1, "k": 2, "rel": 3}


def compiled_evaluate(arrays, families: Sequence[tuple], cuts: Sequence[int],
                      acuts: Sequence[int], levels: Sequence[float], dcgs: Sequence[str],
                      icuts: Sequence, measures: Sequence[tuple], *, oblivious: str,
                      ideal: str, depth: int, disc: np.ndarray) -> tuple:
    """Every row of ``arrays`` (:class:`~mteb_stratified.core.ranking.arrays.RankingArrays`) through
    ``_walk.c``: selection, window sort, walk and normalisation in one call, with no (Q, N)
    temporaries and nothing per query but the results.

    ``cuts`` as :func:`numpy_walk` (the whole list passed as the width); ``icuts``: cutoffs of
    the ideal DCG (``None``: the whole list); ``measures``: per measure ``(family index, cut
    index, norm, slot, k)`` with norm a key of :data:`NORMS` and slot the ideal DCG's
    ``dcg index * len(icuts) + icut index`` or the level's index.  Returns the measures' values
    (M, 4, Q) in the order of :data:`ARRANGEMENTS`, the audit, the truncated-tie flags and
    ``{level: relevant counts}``.
    """
    fn = _load()
    if not fn:
        raise InputError("the compiled walk was built from another version of _walk.c (a "
                         "stale build)" if _compiled_why == "stale" else
                         "the compiled walk is not built in this installation",
                         fix="reinstall with a C compiler available (pip install "
                             "--force-reinstall --no-deps mteb-stratified; in a checkout: "
                             "python -c 'from setuptools import setup; setup()' build_ext "
                             "--inplace), or pass kernel='numpy'")
    scores = arrays.scores
    if scores.dtype not in (np.float32, np.float64):
        scores = scores.astype(np.float64)
    scores = np.ascontiguousarray(scores)
    grades = arrays.grades
    if grades.dtype not in _GRADE_TYPES:
        grades = grades.astype(np.float64)
    grades = np.ascontiguousarray(grades)
    q, n = scores.shape
    tb = None if arrays.tiebreak is None else np.ascontiguousarray(
        np.broadcast_to(arrays.tiebreak, (q, n)), dtype=np.int64)
    qg = None if arrays.qrels_grades is None else np.ascontiguousarray(arrays.qrels_grades,
                                                                        dtype=np.float64)
    nj = 0 if qg is None else qg.shape[1]
    nc = np.ascontiguousarray(arrays.n_candidates, dtype=np.int64)
    width = max(n, nj, 1)
    disc = np.ascontiguousarray(disc[:width])
    inv = 1.0 / np.arange(1, width + 1, dtype=np.float64)

    def arr(values, dtype):
        return np.ascontiguousarray(values, dtype=dtype) if len(values) else np.zeros(1, dtype)

    kinds = arr([walk_code(*fam) for fam in families], np.int64)
    fam_levels = arr([0.0 if fam[0] == GAIN_KERNEL else fam[1] for fam in families], np.float64)
    cut, acut = arr(cuts, np.int64), arr(acuts, np.int64)
    lv = arr(levels, np.float64)
    dcg_codes = arr([walk_code(GAIN_KERNEL, d) for d in dcgs], np.int64)
    icut = arr([np.iinfo(np.int64).max if k is None else k for k in icuts], np.int64)
    mfam, mcut, mslot = (arr([m[i] for m in measures], np.int64) for i in (0, 1, 3))
    mnorm = arr([NORMS[m[2]] for m in measures], np.int64)
    mk = arr([float(m[4]) for m in measures], np.float64)
    res = np.empty((len(measures), 4, q))
    audit = np.zeros((3, len(acuts), q), dtype=np.int64)
    trunc = np.zeros(q, dtype=np.uint8)
    nrel = np.zeros((len(levels), q))

    def p(a):
        return None if a is None else a.ctypes.data

    args = WalkArgs(
        q=q, n=n, scores=p(scores), f32=int(scores.dtype == np.float32), grades=p(grades),
        gtype=_GRADE_TYPES[grades.dtype], tiebreak=p(tb), nc=p(nc), qg=p(qg), nj=nj,
        ideal_cands=int(ideal == "candidates"), input_order=int(oblivious == "input"),
        depth=depth, disc=p(disc), inv=p(inv), nf=len(families), kind=p(kinds),
        level=p(fam_levels), nc_=len(cuts), cut=p(cut), na=len(acuts), acut=p(acut),
        nl=len(levels), levels=p(lv), nd=len(dcgs), dcgs=p(dcg_codes), nic=len(icuts),
        icut=p(icut), nm=len(measures), mfam=p(mfam), mcut=p(mcut), mnorm=p(mnorm),
        marg=p(mslot), mk=p(mk), res=p(res), audit=p(audit), trunc=p(trunc), nrel=p(nrel))
    status = fn(ctypes.byref(args))
    if status != 0:
        raise MemoryError("the compiled walk ran out of memory")
    return res, audit, trunc.astype(bool), dict(zip(levels, nrel))
