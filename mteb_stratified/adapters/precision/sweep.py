"""The precision audit: one table, a row per regime, of what each precision costs.

For each regime (see :mod:`.regimes`) the model scores the task's queries, the scores are
converted to exact Python floats of their dtype, and the tie-aware evaluator reports, per
measure (nDCG@10, RR@10 — MRR@10 — and R@100), the expected value E[·] over all orders of tied
documents, the tie-oblivious value (trec_eval order), ``range = max − min`` and
``bias = oblivious − expected``. Next to them:

* ties: the share of queries with a tie group of ≥ 2 documents reaching into the top 10 / top
  100, the mean and max tie-group size in the top 100, and distinct scores per query;
* ρ (Spearman) and τ (Kendall τ-b) between the regime's scores and the fp32 scores of the same
  candidates, per query, averaged over queries (scipy.stats);
* time per query ``(forward + scoring) / queries`` and peak memory (process RSS on CPU, the
  CUDA allocator peak on a GPU).

The quantized regimes (``int8``, ``binary``, ``binary+rescore``: a bi-encoder's embeddings
quantized, see :mod:`.quantized`) add bytes per document, the query side's search time, the
distinct scores among the top 10, the share of queries tied across the top-10 boundary and the
first stage's expected recall of the fp32 top 100.

Regimes that share a model dtype (``bf16`` and ``bf16+hps``; ``fp32`` and ``scores-bf16``) share
one forward pass — it is bit-identical — and differ only in the scoring step; the forward time
is counted in full in each of them.

Models (see :mod:`.models`): a bi-encoder (``minilm`` or any sentence-transformers model)
retrieves over the whole corpus; a cross-encoder or a yes/no reranker (``smollm2-reranker`` or
any causal LM) reranks the top ``rerank_depth`` candidates of each query from a first stage
(:func:`first_stage_candidates`: a TREC run, a bi-encoder, or the task's own candidate lists).
Tasks (see :mod:`.tasks`): a BEIR folder, the bundled NFCorpus, or an MTEB task name.
"""

from __future__ import annotations

import copy
import csv
import io
import math
import os
from dataclasses import MISSING, dataclass, field, fields
from typing import Callable, Iterable, Mapping, Protocol, Sequence

import numpy as np

from ...core.errors import InputError
from ...core.jsonsafe import ReadOnlyDict, dumps_json
from ...io.corpus_text import doc_text
from ...io.markdown import md_cell
from ...io.outputs import write_together
from ...naming import sweep_key
from .models import ModelSpec, load_model, resolve_model
from .regimes import Regime, get_regime, parse_regimes
from .reranker import DEFAULT_INSTRUCTION
from .resources import measure
from .tasks import SweepTask, candidates_from_run, top_candidates
from .tasks import load_task as _load_task

__all__ = ["SweepRow", "SweepResult", "run_sweep", "order_flips", "describe_flips",
           "plot_ranges", "save_results", "format_table", "format_paper_table",
           "format_quantized_table", "SweepModel",
           "BiEncoderSweep", "CrossEncoderSweep", "RerankerSweep", "build_model", "load_task",
           "first_stage_candidates", "first_stage_model", "no_first_stage", "top_candidates",
           "with_rescore_settings", "MEASURES"]

MEASURES = ("nDCG@10", "RR@10", "R@100")
#: Candidates per query a reranker takes from a first stage when no depth is given (a task's own
#: candidate lists are then taken whole).
DEFAULT_DEPTH = 10


# ----------------------------------------------------------------------------- results

@dataclass(frozen=True)
class SweepRow:
    """One regime of one model: the columns of the audit table (means over queries).

    The fields, in column order (``to_dict()`` gives them in this order; the CSV's columns and
    the JSON's keys); ``<key>`` is a measure's prefix of :data:`MEASURES`
    (:func:`mteb_stratified.naming.sweep_key`: ``ndcg10``, ``rr10``, ``r100``).

    Attributes
    ----------
    model : the model's name.
    regime : the regime's name (:mod:`.regimes`; a rescore names its settings).
    queries : the number of queries scored.
    <key>_expected : E[measure] over all orders of tied documents.
    <key>_oblivious : the tie-oblivious value (trec_eval order).
    <key>_range : max - min of the measure over tie orders.
    <key>_bias : oblivious - expected.
    tied_share_at_10, tied_share_at_100 : the share of queries with a tie group of >= 2
        documents reaching into the top 10 / top 100.
    mean_tie_group_at_100, max_tie_group_at_100 : the mean and largest tie-group size in the
        top 100.
    distinct_scores_per_query : distinct score values per query.
    spearman_vs_fp32, kendall_vs_fp32 : Spearman's rho and Kendall's tau-b between the
        regime's scores and the fp32 scores of the same candidates, averaged over queries.
    ms_per_query : (forward + scoring) time per query, in milliseconds.
    peak_memory_mib : peak memory (process RSS on CPU, the CUDA allocator peak on a GPU).
    <key>_min, <key>_max : the measure's min and max over tie orders (NaN when not computed).
    distinct_scores_at_10 : mean distinct score values among the top 10.
    boundary_tie_share_at_10 : share of queries whose 10th and 11th scores are equal (the
        top-10 set itself depends on the tie order).
    bytes_per_document : the stored document vector's size.
    search_ms_per_query : the query side only (scoring, or quantizing the queries, searching
        and rescoring), in milliseconds.
    first_stage_recall_at_100 : the expected share of the fp32 top 100 that the regime's first
        stage keeps, ties broken at random on both sides.
    metadata : the regime's settings and the run's measurements (read-only; the CSV's columns
        after the fields, sorted by name).

    The last eleven floats are NaN where they do not apply (a reranker has no stored document
    vectors and no first stage of its own).
    """

    model: str
    regime: str
    queries: int
    ndcg10_expected: float
    ndcg10_oblivious: float
    ndcg10_range: float
    ndcg10_bias: float
    rr10_expected: float
    rr10_oblivious: float
    rr10_range: float
    rr10_bias: float
    r100_expected: float
    r100_oblivious: float
    r100_range: float
    r100_bias: float
    tied_share_at_10: float
    tied_share_at_100: float
    mean_tie_group_at_100: float
    max_tie_group_at_100: int
    distinct_scores_per_query: float
    spearman_vs_fp32: float
    kendall_vs_fp32: float
    ms_per_query: float
    peak_memory_mib: float
    ndcg10_min: float = math.nan
    ndcg10_max: float = math.nan
    rr10_min: float = math.nan
    rr10_max: float = math.nan
    r100_min: float = math.nan
    r100_max: float = math.nan
    distinct_scores_at_10: float = math.nan
    boundary_tie_share_at_10: float = math.nan
    bytes_per_document: float = math.nan
    search_ms_per_query: float = math.nan
    first_stage_recall_at_100: float = math.nan
    metadata: Mapping = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "metadata", ReadOnlyDict(self.metadata))

    def to_dict(self) -> dict:
        """The row as a dict, fields in order (the JSON form: ``metadata`` a plain dict)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["metadata"] = copy.deepcopy(dict(self.metadata))
        return out

    @classmethod
    def from_dict(cls, data: Mapping, where: "str | None" = None) -> "SweepRow":
        """The row of :meth:`to_dict` or of a ``precision_sweep.json`` row (its NaNs written
        as ``null``: a float field's null is read back as NaN; a missing optional field is
        NaN). An unknown or missing field is an :class:`InputError` at ``where`` (the file)."""
        names = [f.name for f in fields(cls)]
        unknown = [str(k) for k in data if k not in names]
        missing = [f.name for f in fields(cls) if f.name not in data
                   and f.default is MISSING and f.default_factory is MISSING]
        if unknown or missing:
            parts = ([f"unknown fields {', '.join(unknown)}"] if unknown else []) + (
                [f"missing fields {', '.join(missing)}"] if missing else [])
            raise InputError(f"a precision-sweep row with {'; '.join(parts)}", source=where,
                             fix="give the fields of SweepRow (a row of precision_sweep.json)")
        floats = {f.name for f in fields(cls) if f.type == "float"}  # annotations are strings
        return cls(**{k: (math.nan if v is None and k in floats else v)
                      for k, v in data.items()})


@dataclass(frozen=True)
class SweepResult:
    """The audit of one model on one task: rows in regime order, plus the run settings."""

    model: str
    task: str
    rows: tuple
    settings: dict
    #: fp32 scores per query (1-D tensors), kept so a reranker can use them as its first stage.
    reference_scores: tuple = field(default=(), repr=False, compare=False)
    #: query ids, in the order of ``per_query`` arrays.
    queries: tuple = ()
    #: ``{regime: {measure: {"expected": (Q,) array, "oblivious": (Q,) array}}}``.
    per_query: dict = field(default_factory=dict, repr=False, compare=False)
    #: the query ids of ``reference_scores``, in order.
    reference_qids: tuple = field(default=(), repr=False, compare=False)
    #: for a bi-encoder, the document ids every ``reference_scores`` row is over.
    reference_docs: tuple = field(default=(), repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "rows", tuple(self.rows))
        object.__setattr__(self, "settings", ReadOnlyDict(self.settings))

    def row(self, regime: str) -> SweepRow:
        """The row of one regime (an :class:`InputError` naming the swept ones if absent)."""
        for r in self.rows:
            if r.regime == regime:
                return r
        raise InputError(f"regime {regime!r} is not in this sweep",
                         fix=f"swept regimes: {', '.join(r.regime for r in self.rows)}")

    def to_dict(self) -> dict:
        """One result of ``precision_sweep.json``: model, task, settings and rows."""
        return {"model": self.model, "task": self.task, "settings": dict(self.settings),
                "rows": [r.to_dict() for r in self.rows]}

    @classmethod
    def from_dict(cls, data: Mapping, where: "str | None" = None) -> "SweepResult":
        """A result of :meth:`to_dict` or of ``precision_sweep.json`` (its rows as
        :meth:`SweepRow.from_dict` reads them; the per-query values and fp32 scores are not
        in the file)."""
        try:
            rows = tuple(SweepRow.from_dict(r, where) for r in data["rows"])
            return cls(data["model"], data["task"], rows, dict(data["settings"]))
        except KeyError as e:
            raise InputError(f"a precision-sweep result without {e.args[0]!r}", source=where,
                             fix="give model, task, settings and rows (a result of "
                                 "precision_sweep.json)") from None

    def table(self) -> str:
        """The rows as the audit table (:func:`format_table`)."""
        return format_table(self.rows)


def _measure_columns(measure: str) -> tuple:
    """The four columns of a measure in the full table: (header, attribute, format)."""
    key = sweep_key(measure)
    return ((f"{measure} E", f"{key}_expected", "{:.4f}"), ("obl", f"{key}_oblivious", "{:.4f}"),
            ("range", f"{key}_range", "{:.4f}"), ("bias", f"{key}_bias", "{:+.4f}"))


def _paper_columns(label: str, measure: str) -> tuple:
    """The three columns of a measure in the paper's table (values in %), headed ``label``."""
    key = sweep_key(measure)
    return ((f"{label} E[M] (%)", f"{key}_expected", "{:.2f}"), ("Range", f"{key}_range", "{:.2f}"),
            ("Bias", f"{key}_bias", "{:+.2f}"))


_COLUMNS = (  # (header, attribute, format)
    ("regime", "regime", "{}"),
    *(column for m in MEASURES for column in _measure_columns(m)),
    ("tied@10", "tied_share_at_10", "{:.1%}"), ("tied@100", "tied_share_at_100", "{:.1%}"),
    ("grp@100", "mean_tie_group_at_100", "{:.3f}"), ("max grp", "max_tie_group_at_100", "{}"),
    ("distinct/q", "distinct_scores_per_query", "{:.1f}"),
    ("spearman", "spearman_vs_fp32", "{:.5f}"), ("kendall", "kendall_vs_fp32", "{:.5f}"),
    ("ms/query", "ms_per_query", "{:.1f}"), ("peak MiB", "peak_memory_mib", "{:.0f}"),
)


#: (header, attribute, format): the HPS paper's layout, values in %; it writes RR@10 as MRR@10.
_PAPER_COLUMNS = (("Regime", "regime", "{}"), *_paper_columns("nDCG@10", "nDCG@10"),
                  *_paper_columns("MRR@10", "RR@10"))
_TIE_COLUMNS = (
    ("distinct/q", "distinct_scores_per_query", "{:.1f}"),
    ("tied@10", "tied_share_at_10", "{:.1%}"), ("tied@100", "tied_share_at_100", "{:.1%}"),
    ("mean grp@100", "mean_tie_group_at_100", "{:.3f}"), ("max grp", "max_tie_group_at_100", "{}"),
)


def format_paper_table(rows: Sequence[SweepRow]) -> str:
    """A Markdown table laid out like the HPS paper's: per regime, E[M], range and bias of
    nDCG@10 and MRR@10 (= RR@10) in percentage points, then the distinct-score and tie
    statistics (distinct scores per query, share of queries with a tie reaching into the top
    10 / top 100, mean and largest tie group in the top 100)."""
    head = [c[0] for c in _PAPER_COLUMNS + _TIE_COLUMNS]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        cells = [fmt.format(getattr(r, a) * (100 if i else 1) if i else getattr(r, a))
                 for i, (_, a, fmt) in enumerate(_PAPER_COLUMNS)]
        cells += [fmt.format(getattr(r, a)) for _, a, fmt in _TIE_COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _pct(value: float) -> str:
    return "–" if math.isnan(value) else f"{100 * value:.2f}"


def _quantized_cells(r: SweepRow) -> list:
    cells = [md_cell(r.regime)]
    for m in MEASURES:
        key = sweep_key(m)
        get = lambda stat: getattr(r, f"{key}_{stat}")  # noqa: E731
        cells += [_pct(get("expected")), f"{_pct(get('min'))}–{_pct(get('max'))}",
                  _pct(get("range")), ("–" if math.isnan(get("bias"))
                                       else f"{100 * get('bias'):+.2f}")]
    cells += [f"{r.distinct_scores_at_10:.2f}", f"{r.tied_share_at_10:.1%}",
              f"{r.boundary_tie_share_at_10:.1%}", f"{r.bytes_per_document:.0f}",
              f"{r.search_ms_per_query:.3f}", f"{r.first_stage_recall_at_100:.3f}"]
    meta = r.metadata
    cells.append(f"{_pct(meta['cut_ndcg10_min'])}–{_pct(meta['cut_ndcg10_max'])} "
                 f"({meta['cut_draws']} draws)" if "cut_ndcg10_min" in meta else "–")
    return cells


def format_quantized_table(rows: Sequence[SweepRow]) -> str:
    """A Markdown table comparing quantizations: per regime and measure E[M], its min–max over
    tie orders, range and bias (in %), then distinct scores among the top 10, the share of
    queries with a tie reaching into the top 10 and across its boundary, bytes per document,
    search time per query, the first stage's recall of the fp32 top 100, and, for a rescore,
    the range of E[nDCG@10] over reruns with the first stage's tie at its cut redrawn."""
    head = ["Regime"]
    for m in MEASURES:
        head += [f"{m} E (%)", "min–max", "range", "bias"]
    head += ["distinct@10", "tied@10", "tie at 10|11", "bytes/doc", "search ms/q",
             "recall of fp32 top 100", "nDCG@10 E, cut tie redrawn: min–max"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(_quantized_cells(r)) + " |" for r in rows]
    return "\n".join(lines)


def format_table(rows: Sequence[SweepRow], markdown: bool = False) -> str:
    """A fixed-width (or Markdown) table of sweep rows."""
    head = [c[0] for c in _COLUMNS]
    body = [[fmt.format(getattr(r, attr)) for _, attr, fmt in _COLUMNS] for r in rows]
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in body]
        return "\n".join(lines)
    widths = [max(len(x) for x in col) for col in zip(head, *body)]
    out = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths)))]
    out.append("  ".join("-" * w for w in widths))
    out += ["  ".join(x.ljust(w) if i == 0 else x.rjust(w) for i, (x, w) in enumerate(zip(row, widths)))
            for row in body]
    return "\n".join(out)


# ----------------------------------------------------------------------------- score sources

class SweepModel(Protocol):
    """What the sweep needs from a model: its candidates' scores under a regime.

    ``prepare(model_dtype)`` (optional) loads the model in that dtype, outside the timing;
    ``forward(model_dtype)`` runs the (expensive) forward pass once per dtype and returns an
    opaque state; ``scores(state, regime)`` returns a list (one per query) of 1-D tensors over
    ``candidates[i]`` in the regime's result precision.
    """

    name: str
    qids: list
    candidates: list

    def forward(self, model_dtype: str): ...

    def scores(self, state, regime: Regime) -> list: ...


def _finish_scores(scores, regime: Regime):
    from .scoring import round_scores

    return round_scores(scores, regime.cast_scores_to) if regime.cast_scores_to else scores


class _LoadedModel:
    """The model of ``self.spec``, loaded in one dtype at a time (``prepare``), the way a
    deployment loads it: ``from_pretrained(dtype=...)``, so buffers the model builds itself,
    such as RoPE's inverse frequencies, stay in fp32 where casting a loaded fp32 model would
    round them too. The device holds one model at a time."""

    def prepare(self, model_dtype: str) -> None:
        self._model = (None, None)  # free the previous dtype's model first
        self._model = (model_dtype, load_model(self.spec, model_dtype, self.device))

    def loaded(self, model_dtype: str):
        """The model in ``model_dtype`` (loaded now unless ``prepare`` already did)."""
        if getattr(self, "_model", (None,))[0] != model_dtype:
            self.prepare(model_dtype)
        return self._model[1]

    def release(self) -> None:
        self._model = (None, None)


class BiEncoderSweep(_LoadedModel):
    """A bi-encoder (``minilm`` or any sentence-transformers model): full-corpus retrieval,
    every document is a candidate of every query."""

    def __init__(self, dataset, qids: list, *, device: str = "cpu", batch_size: int = 32,
                 doc_ids: "Sequence[str] | None" = None, spec: "ModelSpec | None" = None) -> None:
        self.spec = spec or resolve_model("minilm")
        self.name = self.spec.name
        self.dataset = dataset
        self.qids = list(qids)
        self.doc_ids = list(dataset.corpus) if doc_ids is None else list(doc_ids)
        self.candidates = [self.doc_ids] * len(self.qids)
        self.device = device
        self.batch_size = batch_size

    def forward(self, model_dtype: str):
        from .hooks import BiEncoderScorer

        scorer = BiEncoderScorer(self.loaded(model_dtype), batch_size=self.batch_size)
        bar = getattr(self, "progress_bars", False)
        q = scorer.embed([self.dataset.queries[x] for x in self.qids], kind="query",
                         progress=bar)
        d = scorer.embed([doc_text(self.dataset.corpus[x], style="beir") for x in self.doc_ids],
                         kind="document", progress=bar)
        return scorer, q, d

    def scores(self, state, regime: Regime) -> list:
        scorer, q, d = state
        s = scorer.with_score_dtype(regime.score_dtype).similarity(q, d)
        return list(_finish_scores(s, regime).cpu())

    def encoded(self, state) -> tuple:
        """The forward pass's (queries, documents) embeddings as ``encode`` returns them: unit
        vectors when the model ends in a Normalize module (its scorer bypasses it)."""
        from ._torch import torch_module
        from .hooks import normalize_modules

        scorer, q, d = state
        if normalize_modules(scorer.model):
            q, d = (torch_module().nn.functional.normalize(x.float(), dim=-1) for x in (q, d))
        return q, d

    def quantized(self, state, regime: Regime):
        """The :class:`~.quantized.QuantizedScores` of a quantized regime: the embeddings of
        the forward pass, quantized as ``encode`` returns them (see :mod:`.quantized`)."""
        from .quantized import RESCORE_DEPTH, quantized_scores

        q, d = self.encoded(state)
        return quantized_scores(q, d, regime.quantization, rescore_docs=regime.rescore_docs,
                                rescore_multiplier=regime.rescore_multiplier or 1,
                                depth=RESCORE_DEPTH)

    def bytes_per_document(self, state, regime: Regime) -> float:
        """Bytes of one stored document vector of a float regime (the forward pass's dtype)."""
        from ...core.ranking.precision import DTYPES

        return float(state[2].shape[-1] * DTYPES[regime.model_dtype].bits // 8)


class _PairSweep(_LoadedModel):
    """A model that scores (query, candidate) pairs given by a first stage."""

    def __init__(self, dataset, qids: list, candidates: list, spec: ModelSpec, *,
                 device: str = "cpu", batch_size: int = 8, first_stage: str = "") -> None:
        if len(candidates) != len(qids):
            raise InputError(f"{len(candidates)} candidate lists for {len(qids)} queries",
                             fix="give one candidate list per query")
        self.spec = spec
        self.name = spec.name
        self.dataset = dataset
        self.qids = list(qids)
        self.candidates = [list(c) for c in candidates]
        self.device = device
        self.batch_size = batch_size
        self.first_stage = first_stage

    def pairs(self) -> list:
        return [(self.dataset.queries[q], doc_text(self.dataset.corpus[d], style="beir"))
                for q, cands in zip(self.qids, self.candidates) for d in cands]

    def split(self, flat) -> list:
        out, pos = [], 0
        for cands in self.candidates:
            out.append(flat[pos:pos + len(cands)])
            pos += len(cands)
        return out


class CrossEncoderSweep(_PairSweep):
    """A sentence-transformers ``CrossEncoder`` reranking a first stage's candidates.

    The forward pass keeps the input of the scoring head (the last ``Linear``); each regime then
    runs the head and the activation in its score dtype (see :class:`.hooks.CrossEncoderScorer`).
    """

    def forward(self, model_dtype: str):
        from .hooks import CrossEncoderScorer

        scorer = CrossEncoderScorer(self.loaded(model_dtype), batch_size=self.batch_size)
        return scorer, scorer.head_inputs(self.pairs(),
                                          progress=getattr(self, "progress_bars", False))

    def scores(self, state, regime: Regime) -> list:
        scorer, hidden = state
        flat = scorer.with_score_dtype(regime.score_dtype).scores_from_head_inputs(hidden)
        return self.split(_finish_scores(flat, regime).cpu())


class RerankerSweep(_PairSweep):
    """A causal LM as a yes/no reranker (``smollm2-reranker``, or any causal LM) over a first
    stage's candidates; prompt, instruction and answer tokens from ``spec.options``."""

    def __init__(self, dataset, qids: list, candidates: list, spec: "ModelSpec | None" = None,
                 *, device: str = "cpu", max_length: int = 256, batch_size: int = 8,
                 activation: str = "softmax", first_stage: str = "") -> None:
        super().__init__(dataset, qids, candidates, spec or resolve_model("smollm2-reranker"),
                         device=device, batch_size=batch_size, first_stage=first_stage)
        self.max_length = max_length
        self.activation = activation

    def prompt_options(self) -> dict:
        """The prompt settings this reranker uses, defaults filled in (recorded with results)."""
        opts = self.spec.options
        pick = lambda key, default: default if opts.get(key) is None else opts[key]  # noqa: E731
        return {"template": pick("template", "qwen3"),
                "instruction": pick("instruction", DEFAULT_INSTRUCTION),
                "yes_token": pick("yes_token", "yes"), "no_token": pick("no_token", "no")}

    def reranker(self, model, tokenizer):
        from .reranker import YesNoReranker, get_template

        opts = self.prompt_options()
        return YesNoReranker(model, tokenizer, max_length=self.max_length,
                             batch_size=self.batch_size, activation=self.activation,
                             template=get_template(opts["template"]),
                             instruction=opts["instruction"], yes_token=opts["yes_token"],
                             no_token=opts["no_token"])

    def forward(self, model_dtype: str):
        rr = self.reranker(*self.loaded(model_dtype))
        return rr, rr.last_hidden(self.pairs(), progress=getattr(self, "progress_bars", False))

    def scores(self, state, regime: Regime) -> list:
        rr, hidden = state
        flat = rr.with_score_dtype(regime.score_dtype).scores_from_hidden(hidden)
        return self.split(_finish_scores(flat, regime).cpu())


# ----------------------------------------------------------------------------- the sweep

def _correlations(scores: list, reference: list) -> tuple:
    """Mean over queries of Spearman ρ and Kendall τ-b of scores against the fp32 reference.

    A query whose scores are all equal in one of the two lists has no defined correlation and is
    left out of the mean (NaN when every query is such).
    """
    from scipy import stats

    rhos, taus = [], []
    for s, r in zip(scores, reference):
        a = np.asarray(s.float().numpy(), dtype=np.float64)
        b = np.asarray(r.float().numpy(), dtype=np.float64)
        if len(a) < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
            continue
        rhos.append(stats.spearmanr(a, b).statistic)
        taus.append(stats.kendalltau(a, b).statistic)
    mean = lambda x: float(np.mean(x)) if x else float("nan")  # noqa: E731
    return mean(rhos), mean(taus)


def _evaluate(qrels: dict, qids: list, candidates: list, scores: list):
    from ... import evaluate
    from .scoring import to_floats

    run = {q: dict(zip(c, to_floats(s))) for q, c, s in zip(qids, candidates, scores)}
    return evaluate({q: qrels[q] for q in qids}, run, list(MEASURES), relevance_level=1,
                    oblivious="trec_eval", tie_cutoffs=[10, 100], whole_list_audit=True)


def _row(model: str, regime: Regime, res, rho: float, tau: float, seconds: float,
         peak: float, extra: dict, columns: "dict | None" = None) -> SweepRow:
    vals = dict(columns or {})
    for m in MEASURES:
        r = res[m]
        key = sweep_key(m)
        vals.update({f"{key}_expected": r.expected, f"{key}_oblivious": r.oblivious,
                     f"{key}_range": r.range, f"{key}_bias": r.bias, f"{key}_min": r.min,
                     f"{key}_max": r.max})
    t10, t100 = res.tie_stats(10), res.tie_stats(100)
    n = len(res.queries)
    return SweepRow(model=model, regime=regime.name, queries=n, **vals,
                    tied_share_at_10=t10["tied_query_share"],
                    tied_share_at_100=t100["tied_query_share"],
                    mean_tie_group_at_100=t100["mean_tie_group_size"],
                    max_tie_group_at_100=int(t100["max_tie_group_size"]),
                    distinct_scores_per_query=t100["distinct_scores_per_query"],
                    spearman_vs_fp32=rho, kendall_vs_fp32=tau,
                    ms_per_query=1000.0 * seconds / max(n, 1), peak_memory_mib=peak,
                    metadata={**regime.metadata(), **extra})


def load_task(task: "str | SweepTask", split: "str | None" = None, *,
              subset: "str | None" = None) -> SweepTask:
    """The :class:`~.tasks.SweepTask` of a BEIR folder, ``nfcorpus`` or an MTEB task name."""
    return task if isinstance(task, SweepTask) else _load_task(task, split, subset=subset)


def select_queries(dataset, max_queries: "int | None") -> list:
    """Judged query ids in sorted order, the first ``max_queries`` of them (None: all)."""
    qids = sorted(dataset.qrels)
    if max_queries is not None:
        if max_queries < 1:
            raise InputError(f"max_queries={max_queries} must be ≥ 1", fix="e.g. --max-queries 20")
        qids = qids[:max_queries]
    return qids


def no_first_stage(name: str, kind: "str | None", task: str) -> InputError:
    """The error of a reranker given no first stage."""
    what = f"{name} is a {kind}: it reranks a first stage" if kind else \
        f"{name} needs a first stage"
    return InputError(f"{what}, and none is given (task {task!r} has no candidate lists)",
                      fix="pass --first-stage RUN.trec (a TREC run of this task) or "
                          "--first-stage minilm (any bi-encoder), or add a bi-encoder as "
                          "another --model")


def first_stage_model(first_stage: "str | ModelSpec") -> ModelSpec:
    """The :class:`ModelSpec` of a first-stage model, which must be a bi-encoder."""
    spec = first_stage if isinstance(first_stage, ModelSpec) else resolve_model(first_stage)
    if spec.kind != "bi-encoder":
        raise InputError(f"the first stage {spec.name!r} is a {spec.kind}; it must be a TREC "
                         "run file or a bi-encoder",
                         fix="pass --first-stage RUN.trec or a sentence-transformers bi-encoder "
                             "(e.g. minilm)")
    return spec


def first_stage_candidates(task: SweepTask, qids: list, first_stage, depth: int, *,
                           device: str = "cpu", batch_size: int = 32,
                           say: "Callable[[str], None] | None" = None) -> tuple:
    """``(qids, candidates, description)`` of a reranker's first stage: the top ``depth``
    documents per query (ties: doc id descending; None: :data:`DEFAULT_DEPTH`, or all of a
    task's own candidate lists), from

    * a :class:`SweepResult` of a bi-encoder run in the same sweep (its fp32 scores);
    * a path to a TREC run file;
    * a bi-encoder (a :class:`ModelSpec`, a short name, a folder or a hub name), run in fp32;
    * None: the task's own candidates (an MTEB reranking task's ``top_ranked``).

    Queries the first stage does not cover are left out (``say`` reports how many).
    """
    say = say or (lambda msg: None)
    if first_stage is not None and depth is None:
        depth = DEFAULT_DEPTH
    if isinstance(first_stage, SweepResult):
        if not first_stage.reference_docs:
            raise InputError(f"{first_stage.model} was not run as a bi-encoder over the corpus: "
                             "its scores cannot be a first stage",
                             fix="use the result of a bi-encoder sweep, a TREC run or a bi-encoder")
        by_q = dict(zip(first_stage.reference_qids, first_stage.reference_scores))
        kept = [q for q in qids if q in by_q]
        cands = top_candidates(first_stage.reference_docs, [by_q[q] for q in kept], depth)
        what = f"{first_stage.model} fp32 top {depth}"
    elif first_stage is None:
        if not task.top_ranked:
            raise no_first_stage("a reranker", None, task.name)
        kept = [q for q in qids if task.top_ranked.get(q)]
        cands = [list(dict.fromkeys(task.top_ranked[q]))[:depth] for q in kept]  # None: all
        missing = {d for c in cands for d in c if d not in task.dataset.corpus}
        if missing:
            raise InputError(f"the task's candidate lists name {len(missing)} documents that are "
                             f"not in its corpus (e.g. {sorted(missing)[:3]})",
                             fix="check the task's data")
        what = ("the task's top_ranked (all)" if depth is None
                else f"the task's top_ranked (first {depth} as listed)")
    elif isinstance(first_stage, str) and os.path.isfile(first_stage) \
            and not first_stage.lower().endswith(".gguf"):
        kept, cands = candidates_from_run(first_stage, qids, task.dataset.corpus, depth)
        what = f"TREC run {first_stage} (top {depth})"
    else:
        spec = first_stage_model(first_stage)
        say(f"[first stage] {spec.name}: fp32 retrieval over {len(task.dataset.corpus)} documents")
        first = BiEncoderSweep(task.dataset, qids, device=device, spec=spec,
                               batch_size=batch_size)
        ref = first.scores(first.forward("float32"), get_regime("fp32"))
        first.release()
        kept, cands = list(qids), top_candidates(first.doc_ids, ref, depth)
        what = f"{spec.name} fp32 top {depth}"
    if not kept:
        raise InputError("the first stage covers none of the selected queries",
                         fix="give a first stage that ranks this task's judged queries")
    if len(kept) < len(qids):
        say(f"[first stage] {len(qids) - len(kept)} of {len(qids)} queries have no candidates "
            "there and are left out")
    return kept, cands, what


def build_model(model: "str | ModelSpec", task, qids: list, *, kind: "str | None" = None,
                device: str = "cpu", rerank_depth: "int | None" = None, max_length: int = 256,
                activation: str = "softmax", first_stage=None, batch_size: "int | None" = None,
                progress: "Callable[[str], None] | None" = None, **options) -> SweepModel:
    """The :class:`SweepModel` of a model: a short name (``minilm``, ``smollm2-reranker``), a
    folder, a GGUF file, a hub name or a :class:`ModelSpec`.

    A bi-encoder retrieves over the whole corpus; a cross-encoder or yes/no reranker reranks
    the top ``rerank_depth`` of ``first_stage`` (see :func:`first_stage_candidates`).
    ``options``: ``template``, ``instruction``, ``yes_token``, ``no_token`` of a yes/no reranker.
    """
    task = task if isinstance(task, SweepTask) else SweepTask(
        getattr(task, "name", "task"), task, "dataset", "")
    spec = model if isinstance(model, ModelSpec) else resolve_model(model, kind, **options)
    if spec.kind == "yes-no-reranker":
        from .reranker import get_template

        get_template(spec.options.get("template") or "qwen3")  # a bad one fails before work
    if spec.kind == "bi-encoder":
        return BiEncoderSweep(task.dataset, qids, device=device, spec=spec,
                              batch_size=batch_size or 32)
    kept, cands, what = first_stage_candidates(task, qids, first_stage, rerank_depth,
                                               device=device, batch_size=batch_size or 32,
                                               say=progress)
    if spec.kind == "cross-encoder":
        return CrossEncoderSweep(task.dataset, kept, cands, spec, device=device,
                                 batch_size=batch_size or 32, first_stage=what)
    return RerankerSweep(task.dataset, kept, cands, spec, device=device, max_length=max_length,
                         batch_size=batch_size or 8, activation=activation, first_stage=what)


def run_sweep(model: "str | ModelSpec | SweepModel" = "minilm", task="nfcorpus", regimes=None,
              *, max_queries: "int | None" = None, device: str = "cpu",
              rerank_depth: "int | None" = None,
              max_length: int = 256, activation: str = "softmax", first_stage=None,
              kind: "str | None" = None, batch_size: "int | None" = None,
              split: "str | None" = None, progress: "Callable[[str], None] | None" = None,
              progress_bars: bool = False, rescore_docs: "str | None" = None,
              rescore_multiplier: "int | None" = None, cut_draws: "int | None" = None,
              seed: int = 0,
              **options) -> SweepResult:
    """Run one model under each regime on a task and return the audit table.

    ``model``: see :func:`build_model` (or a ready :class:`SweepModel`); ``task``: a BEIR
    folder, ``nfcorpus``, an MTEB task name or a :class:`~.tasks.SweepTask`. The fp32 forward
    pass always runs (it is the reference of the correlations); only the requested regimes get
    rows. ``first_stage`` (rerankers): see :func:`first_stage_candidates`. The quantized
    regimes (``int8``, ``binary``, ``binary+rescore``) need a bi-encoder; ``rescore_docs``
    (``binary`` or ``int8``) and ``rescore_multiplier`` (an integer ≥ 1, default 2) set how
    ``binary+rescore`` rescores (see :mod:`.quantized`); its first stage cuts a tie group of
    Hamming scores in FAISS's order, and ``cut_draws`` reruns of the rescore with that tie
    broken at random (``seed``) say what another order would have given (0: none).
    """
    from .quantized import DEFAULT_CUT_DRAWS

    regimes = with_rescore_settings(parse_regimes(regimes), rescore_docs, rescore_multiplier)
    cut_draws = DEFAULT_CUT_DRAWS if cut_draws is None else cut_draws
    say = progress or (lambda msg: None)
    sweep_task = load_task(task, split)
    dataset = sweep_task.dataset
    if isinstance(model, (str, ModelSpec)):
        qids = select_queries(dataset, max_queries)
        label = model.name if isinstance(model, ModelSpec) else model
        say(f"[{label}] {len(qids)} queries, task {sweep_task.name}")
        source = build_model(model, sweep_task, qids, kind=kind, device=device,
                             rerank_depth=rerank_depth, max_length=max_length,
                             activation=activation, first_stage=first_stage,
                             batch_size=batch_size, progress=say, **options)
    else:
        source = model
    _check_quantizable(source, regimes)
    try:
        source.progress_bars = progress_bars  # a bar per forward batch (stderr)
    except AttributeError:  # a model object that takes no attributes: no bars
        pass

    dtypes = ["float32"] + [d for d in dict.fromkeys(r.model_dtype for r in regimes) if d != "float32"]
    rows, reference, per_query, queries = [], None, {}, ()
    for dtype in dtypes:
        say(f"[{source.name}] forward pass in {dtype} ...")
        if hasattr(source, "prepare"):
            source.prepare(dtype)  # model loading is not part of the timed forward pass
        with measure(device) as fwd:
            state = source.forward(dtype)
        say(f"[{source.name}] forward {dtype}: {fwd.usage.seconds:.1f} s")
        if dtype == "float32":
            reference = source.scores(state, get_regime("fp32"))
        for regime in (r for r in regimes if r.model_dtype == dtype):
            with measure(device) as sc:
                got = _regime_scores(source, state, regime)
            res = _evaluate(dataset.qrels, source.qids, got.candidates, got.scores)
            rho, tau = _correlations(got.scores, got.reference(reference))
            extra = {"forward_s": fwd.usage.seconds, "score_s": sc.usage.seconds,
                     "memory_kind": fwd.usage.memory_kind, "device": str(device),
                     "distinct_scores": _distinct(got.scores), **got.metadata,
                     **_cut_spread(source, state, regime, got, dataset.qrels, cut_draws, seed)}
            seconds = fwd.usage.seconds + (got.timed_s if got.timed_s is not None
                                           else sc.usage.seconds)
            rows.append(_row(source.name, regime, res, rho, tau, seconds,
                             max(fwd.usage.peak_mib, sc.usage.peak_mib), extra,
                             got.columns(reference, sc.usage.seconds)))
            say(f"[{source.name}] {regime.name}: nDCG@10 E={rows[-1].ndcg10_expected:.4f} "
                f"range={rows[-1].ndcg10_range:.4f}")
            per_query[regime.name] = {m: {k: np.asarray(res[m].values[k]) for k in
                                          ("expected", "oblivious")} for m in MEASURES}
            queries = tuple(res.queries)
        del state
        if hasattr(source, "release"):
            source.release()  # free the model of this dtype before loading the next
    order = {r.name: i for i, r in enumerate(regimes)}
    rows.sort(key=lambda r: order[r.regime])
    settings = {"queries": len(source.qids), "candidates_per_query": float(np.mean(
        [len(c) for c in source.candidates])), "device": str(device), "measures": list(MEASURES),
        "oblivious": "trec_eval", "relevance_level": 1, **sweep_task.metadata()}
    spec = getattr(source, "spec", None)
    if spec is not None:
        settings.update(spec.metadata(), **{f"model_{k}": v for k, v in spec.options.items()})
    if isinstance(source, _PairSweep):
        settings.update(rerank_depth=max((len(c) for c in source.candidates), default=0),
                        first_stage=source.first_stage, batch_size=source.batch_size)
    if isinstance(source, RerankerSweep):
        settings.update(max_length=source.max_length, activation=source.activation,
                        **{f"model_{k}": v for k, v in source.prompt_options().items()})
    docs = tuple(getattr(source, "doc_ids", ()) or ())
    return SweepResult(source.name, sweep_task.name, tuple(rows), settings, tuple(reference),
                       queries, per_query, tuple(source.qids), docs)


def _check_quantizable(source, regimes) -> None:
    """Quantized regimes need a model with embeddings (a bi-encoder)."""
    quantized = [r.name for r in regimes if r.quantization]
    if quantized and not hasattr(source, "quantized"):
        kind = getattr(getattr(source, "spec", None), "kind", type(source).__name__)
        raise InputError(f"{', '.join(quantized)} quantize a bi-encoder's embeddings, and "
                         f"{source.name} is a {kind}: it has none",
                         fix="sweep the quantized regimes with a bi-encoder (e.g. --model "
                             "minilm), the float ones with a reranker")


def with_rescore_settings(regimes: tuple, docs: "str | None", multiplier) -> tuple:
    """The regimes with the rescoring settings applied: ``docs`` one of
    :data:`~.quantized.RESCORE_DOCS`, ``multiplier`` an integer ≥ 1; settings given with no
    rescoring regime are an error."""
    from .quantized import RESCORE_DOCS, check_rescore_multiplier

    if docs is None and multiplier is None:
        return regimes
    if not any(r.rescore_docs for r in regimes):
        raise InputError("rescoring settings were given, but no regime rescores",
                         fix="add the binary+rescore regime, or drop --rescore-docs and "
                             "--rescore-multiplier")
    if docs is not None and docs not in RESCORE_DOCS:
        raise InputError(f"unknown rescoring vectors {docs!r}",
                         fix=f"use one of {', '.join(RESCORE_DOCS)}")
    if multiplier is not None:
        multiplier = check_rescore_multiplier(multiplier)
    return tuple(r.with_rescore(docs, multiplier) for r in regimes)


@dataclass(frozen=True)
class _Scored:
    """One regime's scores and where they came from (see :func:`_regime_scores`)."""

    scores: list
    candidates: list
    positions: "np.ndarray | None" = None  # (Q, C) document positions of a quantized regime
    quantized: object = None
    bytes_per_document: float = math.nan
    metadata: dict = field(default_factory=dict)

    @property
    def timed_s(self) -> "float | None":
        """Index and search time of a quantized regime (its audit-only work left out)."""
        q = self.quantized
        return None if q is None else q.index_s + q.search_s

    def reference(self, reference: list) -> list:
        """The fp32 reference scores of this regime's candidates."""
        if self.positions is None:
            return reference
        return [r[np.asarray(p)] for r, p in zip(reference, self.positions)]

    def columns(self, reference: list, score_s: float) -> dict:
        """The row's columns for comparing quantizations (:class:`SweepRow`'s
        ``distinct_scores_at_10``, ``boundary_tie_share_at_10``, ``bytes_per_document``,
        ``search_ms_per_query`` and ``first_stage_recall_at_100``)."""
        n = max(len(self.scores), 1)
        q = self.quantized
        out = {"search_ms_per_query": 1000.0 * (q.search_s if q is not None else score_s) / n,
               "bytes_per_document": float(q.bytes_per_document if q is not None
                                           else self.bytes_per_document)}
        out.update(_top10_stats(self.scores))
        if not math.isnan(out["bytes_per_document"]):  # a bi-encoder over the whole corpus
            stage = q.first_stage if q is not None else _stack(self.scores)
            depth = q.first_stage_depth if q is not None else None
            out["first_stage_recall_at_100"] = _first_stage_recall(stage, depth,
                                                                   _stack(reference))
        return out


def _float64(s) -> np.ndarray:
    """One query's scores (a tensor in any float dtype, or an array) as exact float64."""
    return np.asarray(s.double().numpy() if hasattr(s, "double") else s, dtype=np.float64)


def _stack(scores: list) -> np.ndarray:
    return np.stack([_float64(s) for s in scores])


def _regime_scores(source, state, regime: Regime) -> _Scored:
    """A regime's scores: the model's own (float regimes) or its embeddings quantized."""
    if not regime.quantization:
        bpd = (source.bytes_per_document(state, regime)
               if hasattr(source, "bytes_per_document") else math.nan)
        return _Scored(source.scores(state, regime), source.candidates,
                       bytes_per_document=bpd)
    import torch

    q = source.quantized(state, regime)
    if q.first_stage_depth is None:  # every document, in the source's order
        cands = source.candidates
    else:
        docs = np.asarray(source.doc_ids, dtype=object)
        cands = [list(docs[p]) for p in q.positions]
    meta = {k: v for k, v in q.metadata.items() if k != "quantization"}
    meta.update(index_s=q.index_s, search_s=q.search_s)
    return _Scored([torch.from_numpy(np.ascontiguousarray(r)) for r in q.scores], cands,
                   positions=None if q.first_stage_depth is None else q.positions, quantized=q,
                   metadata=meta)


def _cut_spread(source, state, regime: Regime, got: _Scored, qrels: dict, draws: int,
                seed: int) -> dict:
    """Each measure's mean over ``draws`` rescores whose first-stage tie at the cut is broken
    at random (:func:`~.quantized.cut_draws`): their mean, sample sd, min and max, next to
    FAISS's own order (the row). Empty for a regime without a cut or when ``draws`` is 0."""
    q = got.quantized
    if q is None or q.first_stage_depth is None or draws < 1 \
            or q.first_stage_depth >= q.first_stage.shape[1]:
        return {}
    import torch

    from .quantized import cut_draws

    queries, documents = source.encoded(state)
    docs = np.asarray(source.doc_ids, dtype=object)
    means: dict = {m: [] for m in MEASURES}
    for positions, scores in cut_draws(queries, documents, q.first_stage, q.first_stage_depth,
                                       regime.rescore_docs, draws, seed):
        res = _evaluate(qrels, source.qids, [list(docs[p]) for p in positions],
                        [torch.from_numpy(np.ascontiguousarray(r)) for r in scores])
        for m in MEASURES:
            means[m].append(res[m].expected)
    out: dict = {"cut_draws": draws, "cut_seed": seed}
    for m in MEASURES:
        v, key = np.asarray(means[m]), sweep_key(m)
        out.update({f"cut_{key}_mean": float(v.mean()),
                    f"cut_{key}_sd": float(v.std(ddof=1)) if len(v) > 1 else math.nan,
                    f"cut_{key}_min": float(v.min()), f"cut_{key}_max": float(v.max())})
    return out


def _top10_stats(scores: list) -> dict:
    """Mean distinct values among each query's 10 best scores, and the share of queries whose
    10th and 11th best scores are equal (a tie across the top-10 boundary)."""
    distinct, boundary = [], []
    for s in scores:
        a = -np.sort(-_float64(s))
        distinct.append(len(np.unique(a[:10])))
        boundary.append(len(a) > 10 and a[9] == a[10])
    return {"distinct_scores_at_10": float(np.mean(distinct)) if distinct else math.nan,
            "boundary_tie_share_at_10": float(np.mean(boundary)) if boundary else math.nan}


def _first_stage_recall(stage: np.ndarray, depth: "int | None", reference: np.ndarray,
                        k: int = 100) -> float:
    """Mean over queries of E|S ∩ R| / |R|: ``S`` the first stage's top ``depth`` (its own top
    ``k`` when it has no separate cut), ``R`` the fp32 top ``k``, ties broken at random and
    independently on each side (:func:`~mteb_stratified.core.ranking.ties.top_k_membership`)."""
    from ...core.ranking.ties import top_k_membership

    k = min(k, reference.shape[1])
    p_ref = top_k_membership(reference, k)
    p_stage = top_k_membership(stage, depth or k)
    return float(np.mean((p_stage * p_ref).sum(axis=1) / k))


def _distinct(scores: list) -> int:
    """Distinct score values summed over queries (each query's own candidates)."""
    return int(sum(len(np.unique(np.asarray(s.float().numpy(), dtype=np.float64)))
                   for s in scores))


# ----------------------------------------------------------------------------- comparisons

def _means_on(result: SweepResult, regime: str, measure: str, common: list) -> tuple:
    index = {q: i for i, q in enumerate(result.queries)}
    rows = [index[q] for q in common]
    vals = result.per_query[regime][measure]
    return float(np.mean(vals["oblivious"][rows])), float(np.mean(vals["expected"][rows]))


def order_flips(a: SweepResult, b: SweepResult) -> list:
    """Per regime and measure: does the order of models a and b flip between oblivious and E[·]?

    Both are compared on the queries they share (a reranker's subset, say). ``flip`` is True
    when sign(a.oblivious − b.oblivious) ≠ sign(a.expected − b.expected) and neither difference
    is 0.
    """
    common = [q for q in a.queries if q in set(b.queries)]
    if not common:
        raise InputError(f"{a.model} and {b.model} were run on no common query",
                         fix="run both with the same --max-queries")
    out = []
    for ra in a.rows:
        if ra.regime not in b.per_query or ra.regime not in a.per_query:
            continue
        for m in MEASURES:
            obl_a, exp_a = _means_on(a, ra.regime, m, common)
            obl_b, exp_b = _means_on(b, ra.regime, m, common)
            d_obl, d_exp = obl_a - obl_b, exp_a - exp_b
            flip = bool(d_obl != 0 and d_exp != 0 and math.copysign(1, d_obl) != math.copysign(1, d_exp))
            out.append({"regime": ra.regime, "measure": m, "models": [a.model, b.model],
                        "queries": len(common), "oblivious_diff": d_obl, "expected_diff": d_exp,
                        "flip": flip})
    return out


def describe_flips(flips: Iterable[dict]) -> str:
    lines = []
    for f in flips:
        a, b = f["models"]
        lead_obl = a if f["oblivious_diff"] > 0 else b
        lead_exp = a if f["expected_diff"] > 0 else b
        verdict = "FLIPS" if f["flip"] else "holds"
        lines.append(f"{f['regime']:<12} {f['measure']:<8} order {verdict}: oblivious ranks "
                     f"{lead_obl} first ({f['oblivious_diff']:+.4f}), expected ranks {lead_exp} "
                     f"first ({f['expected_diff']:+.4f})")
    return "\n".join(lines)


# ----------------------------------------------------------------------------- outputs

def plot_ranges(results: Sequence[SweepResult], path) -> str:
    """A PNG, one column per model, saved to ``path`` (a path or a binary file object): on top
    the tie range (max − min) per regime, one bar per measure; below, each measure's expected
    value per regime with its min–max bar over tie orders and the oblivious value (a cross), so
    a regime's tie noise (the bar) and its lost information (the expected value against fp32's)
    read side by side. Returns ``path``."""
    try:
        import matplotlib
        from matplotlib.figure import Figure  # no pyplot, no backend switch: no global state
    except ImportError as exc:
        from ..._optional import install_hint

        raise ImportError(f"the plot needs matplotlib: {install_hint('plots')} "
                          "(or pass --no-plot)") from exc

    results = [r for r in results if r.rows]
    if not results:
        raise InputError("nothing to plot", fix="run at least one regime")
    # the task name is the user's: drawn as plain text, never as mathtext ($...$) or TeX
    with matplotlib.rc_context({"text.parse_math": False, "text.usetex": False}):
        fig = Figure(figsize=(6.5 * len(results), 8.0))
        axes = fig.subplots(2, len(results), squeeze=False)
        width = 0.8 / len(MEASURES)
        for ax, res in zip(axes[1], results):
            _plot_expected(ax, res, width)
        for ax, res in zip(axes[0], results):
            x = np.arange(len(res.rows))
            for j, m in enumerate(MEASURES):
                vals = [getattr(r, f"{sweep_key(m)}_range") for r in res.rows]
                ax.bar(x + (j - (len(MEASURES) - 1) / 2) * width, vals, width, label=m)
            ax.set_xticks(x, [r.regime for r in res.rows], rotation=30, ha="right")
            ax.set_ylabel("range (max − min over tie orders)")
            ax.set_title(f"{res.model} on {res.task} ({res.settings.get('queries')} queries)")
            ax.legend()
            ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    return path


def _plot_expected(ax, res: SweepResult, width: float) -> None:
    """Expected value per regime and measure, with its min–max bar and the oblivious value."""
    x = np.arange(len(res.rows))
    for j, m in enumerate(MEASURES):
        key = sweep_key(m)
        get = lambda stat: np.array([getattr(r, f"{key}_{stat}") for r in res.rows])  # noqa
        pos = x + (j - (len(MEASURES) - 1) / 2) * width
        exp = get("expected")
        # E lies in [min, max] up to rounding (1e-16 outside it, at times): never negative
        err = [np.clip(exp - get("min"), 0, None), np.clip(get("max") - exp, 0, None)]
        bars = ax.errorbar(pos, exp, yerr=err, fmt="o", capsize=3, label=f"{m} E (bar: min–max)")
        ax.plot(pos, get("oblivious"), "x", color=bars[0].get_color())
        fp32 = [getattr(r, f"{key}_expected") for r in res.rows if r.regime == "fp32"]
        if fp32:  # what a regime lost, read against the fp32 reference
            ax.axhline(fp32[0], ls=":", lw=1, color=bars[0].get_color())
    ax.set_xticks(x, [r.regime for r in res.rows], rotation=30, ha="right")
    ax.set_ylabel("expected value over tie orders (x: oblivious; dotted: fp32)")
    ax.legend(fontsize="small")
    ax.grid(axis="y", alpha=0.3)


def save_results(results: Sequence[SweepResult], out_dir: str, flips: "list | None" = None,
                 plot: bool = True) -> dict:
    """Write ``precision_sweep.csv``, ``precision_sweep.json``, ``precision_sweep.md`` and the PNG."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {"csv": os.path.join(out_dir, "precision_sweep.csv"),
             "json": os.path.join(out_dir, "precision_sweep.json"),
             "markdown": os.path.join(out_dir, "precision_sweep.md")}
    rows = [r for res in results for r in res.rows]
    fieldnames = [f.name for f in fields(SweepRow) if f.name != "metadata"]
    meta_keys = sorted({k for r in rows for k in r.metadata})
    table = io.StringIO(newline="")
    w = csv.writer(table)
    w.writerow(fieldnames + meta_keys)
    for r in rows:
        w.writerow([getattr(r, k) for k in fieldnames] + [r.metadata.get(k) for k in meta_keys])
    data = dumps_json({"results": [res.to_dict() for res in results],
                       "order_flips": flips or []}, indent=2, default=str)
    md = io.StringIO()
    for res in results:
        md.write(f"### {md_cell(res.model)} on {md_cell(res.task)} "
                 f"({res.settings.get('queries')} queries)\n\n")
        md.write(format_paper_table(res.rows) + "\n\n")
        if any(r.metadata.get("quantization") for r in res.rows):
            md.write("Quantized retrieval (values in %; first-stage recall: the expected "
                     "share of the fp32 top 100 the regime's first stage keeps):\n\n")
            md.write(format_quantized_table(res.rows) + "\n\n")
        md.write("All columns:\n\n" + format_table(res.rows, markdown=True) + "\n\n")
    if flips:
        md.write("Order of the two models, oblivious vs expected:\n\n")
        md.write("".join(f"- {md_cell(line)}\n" for line in describe_flips(flips).splitlines()))
    files = [(paths["csv"], table.getvalue().encode("utf-8")),
             (paths["json"], data.encode("utf-8")),
             (paths["markdown"], md.getvalue().encode("utf-8"))]
    if plot:
        paths["png"] = os.path.join(out_dir, "precision_sweep.png")
        png = io.BytesIO()
        plot_ranges(results, png)
        files.append((paths["png"], png.getvalue()))
    # one unit: a kill never leaves this run's CSV beside the last run's JSON, Markdown or PNG
    write_together(files)
    return paths
