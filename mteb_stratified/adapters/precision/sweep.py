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

Regimes that share a model dtype (``bf16`` and ``bf16+hps``; ``fp32`` and ``scores-bf16``) share
one forward pass — it is bit-identical — and differ only in the scoring step; the forward time
is counted in full in each of them.

Models: ``minilm`` retrieves over the full corpus (3,633 NFCorpus documents); ``smollm2-reranker``
reranks the top ``rerank_depth`` fp32 MiniLM candidates of each query (a subset of queries:
its forward pass is a 135M-parameter LM per pair).
"""

from __future__ import annotations

import csv
import math
import os
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Protocol, Sequence

import numpy as np

from ...core.errors import InputError
from ...core.jsonsafe import dumps_json
from ...io.corpus_text import doc_text
from ...io.outputs import atomic_write
from .models import MODEL_NAMES
from .regimes import Regime, parse_regimes
from .resources import measure

__all__ = ["SweepRow", "SweepResult", "run_sweep", "order_flips", "describe_flips",
           "plot_ranges", "save_results", "format_table", "SweepModel", "TASKS", "MEASURES"]

TASKS = ("nfcorpus",)
MEASURES = ("nDCG@10", "RR@10", "R@100")
def _field(measure: str) -> str:
    """The :class:`SweepRow` field prefix of a measure: ``nDCG@10`` -> ``ndcg10``."""
    return measure.replace("@", "").lower()


# ----------------------------------------------------------------------------- results

@dataclass(frozen=True)
class SweepRow:
    """One regime of one model: the columns of the audit table (means over queries)."""

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
    metadata: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


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

    def row(self, regime: str) -> SweepRow:
        for r in self.rows:
            if r.regime == regime:
                return r
        raise InputError(f"regime {regime!r} is not in this sweep",
                         fix=f"swept regimes: {', '.join(r.regime for r in self.rows)}")

    def to_dict(self) -> dict:
        return {"model": self.model, "task": self.task, "settings": dict(self.settings),
                "rows": [r.to_dict() for r in self.rows]}

    def table(self) -> str:
        return format_table(self.rows)


_COLUMNS = (  # (header, attribute, format)
    ("regime", "regime", "{}"),
    ("nDCG@10 E", "ndcg10_expected", "{:.4f}"), ("obl", "ndcg10_oblivious", "{:.4f}"),
    ("range", "ndcg10_range", "{:.4f}"), ("bias", "ndcg10_bias", "{:+.4f}"),
    ("RR@10 E", "rr10_expected", "{:.4f}"), ("obl", "rr10_oblivious", "{:.4f}"),
    ("range", "rr10_range", "{:.4f}"), ("bias", "rr10_bias", "{:+.4f}"),
    ("R@100 E", "r100_expected", "{:.4f}"), ("obl", "r100_oblivious", "{:.4f}"),
    ("range", "r100_range", "{:.4f}"), ("bias", "r100_bias", "{:+.4f}"),
    ("tied@10", "tied_share_at_10", "{:.1%}"), ("tied@100", "tied_share_at_100", "{:.1%}"),
    ("grp@100", "mean_tie_group_at_100", "{:.3f}"), ("max grp", "max_tie_group_at_100", "{}"),
    ("distinct/q", "distinct_scores_per_query", "{:.1f}"),
    ("spearman", "spearman_vs_fp32", "{:.5f}"), ("kendall", "kendall_vs_fp32", "{:.5f}"),
    ("ms/query", "ms_per_query", "{:.1f}"), ("peak MiB", "peak_memory_mib", "{:.0f}"),
)


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


class BiEncoderSweep:
    """``minilm``: full-corpus retrieval; every document is a candidate of every query."""

    name = "minilm"

    def __init__(self, dataset, qids: list, *, device: str = "cpu", batch_size: int = 32,
                 doc_ids: "Sequence[str] | None" = None) -> None:
        self.dataset = dataset
        self.qids = list(qids)
        self.doc_ids = list(dataset.corpus) if doc_ids is None else list(doc_ids)
        self.candidates = [self.doc_ids] * len(self.qids)
        self.device = device
        self.batch_size = batch_size

    def prepare(self, model_dtype: str) -> None:
        from .models import load_minilm

        self._model = (model_dtype, load_minilm(model_dtype, self.device))

    def forward(self, model_dtype: str):
        from .hooks import BiEncoderScorer

        if getattr(self, "_model", (None,))[0] != model_dtype:
            self.prepare(model_dtype)
        model = self._model[1]
        scorer = BiEncoderScorer(model, batch_size=self.batch_size)
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

    def release(self) -> None:
        self._model = (None, None)


class RerankerSweep:
    """``smollm2-reranker``: reranks the top ``depth`` fp32 MiniLM candidates of each query."""

    name = "smollm2-reranker"

    def __init__(self, dataset, qids: list, *, device: str = "cpu", depth: int = 10,
                 max_length: int = 256, batch_size: int = 8, activation: str = "softmax",
                 first_stage: "list | None" = None) -> None:
        self.dataset = dataset
        self.qids = list(qids)
        self.device = device
        self.depth = depth
        self.max_length = max_length
        self.batch_size = batch_size
        self.activation = activation
        if first_stage is None:
            first = BiEncoderSweep(dataset, self.qids, device=device)
            state = first.forward("float32")
            first_stage = first.scores(state, parse_regimes("fp32")[0])
            doc_ids = first.doc_ids
        else:
            doc_ids = list(dataset.corpus)
        self.candidates = []
        for row in first_stage:
            top = np.argsort(-np.asarray(row, dtype=np.float64), kind="stable")[:depth]
            self.candidates.append([doc_ids[i] for i in top])
        self._base = None

    def prepare(self, model_dtype: str) -> None:
        """Load SmolLM2 once (fp32) and cast a copy to ``model_dtype``."""
        import copy

        from ._torch import check_dtype_supported, to_torch_dtype
        from .models import load_smollm2

        if self._base is None:
            self._base = load_smollm2("float32", self.device)
        model, tokenizer = self._base
        if model_dtype != "float32":
            check_dtype_supported(model_dtype, self.device)
            model = copy.deepcopy(model).to(to_torch_dtype(model_dtype))
        self._model = (model_dtype, model, tokenizer)

    def forward(self, model_dtype: str):
        from .reranker import YesNoReranker

        if getattr(self, "_model", (None,))[0] != model_dtype:
            self.prepare(model_dtype)
        _, model, tokenizer = self._model
        rr = YesNoReranker(model, tokenizer, max_length=self.max_length,
                           batch_size=self.batch_size, activation=self.activation)
        pairs = [(self.dataset.queries[q], doc_text(self.dataset.corpus[d], style="beir"))
                 for q, cands in zip(self.qids, self.candidates) for d in cands]
        return rr, rr.last_hidden(pairs, progress=getattr(self, "progress_bars", False))

    def release(self) -> None:
        self._model = (None, None, None)

    def scores(self, state, regime: Regime) -> list:
        rr, hidden = state
        s = _finish_scores(rr.with_score_dtype(regime.score_dtype).scores_from_hidden(hidden), regime)
        out, pos = [], 0
        for cands in self.candidates:
            out.append(s[pos:pos + len(cands)])
            pos += len(cands)
        return out


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
         peak: float, extra: dict) -> SweepRow:
    vals = {}
    for m in MEASURES:
        r = res[m]
        key = _field(m)
        vals.update({f"{key}_expected": r.expected, f"{key}_oblivious": r.oblivious,
                     f"{key}_range": r.range, f"{key}_bias": r.bias})
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


def load_task(task: str):
    """The BEIR dataset of a task name (bundled NFCorpus test split)."""
    from ...io import bundled_path, load_beir

    if task.lower() not in TASKS:
        raise InputError(f"unknown task {task!r}", fix=f"tasks: {', '.join(TASKS)}")
    return load_beir(bundled_path(task.lower()), "test")


def select_queries(dataset, max_queries: "int | None") -> list:
    """Judged query ids in sorted order, the first ``max_queries`` of them (None: all)."""
    qids = sorted(dataset.qrels)
    if max_queries is not None:
        if max_queries < 1:
            raise InputError(f"max_queries={max_queries} must be ≥ 1", fix="e.g. --max-queries 20")
        qids = qids[:max_queries]
    return qids


def build_model(name: str, dataset, qids: list, *, device: str = "cpu", rerank_depth: int = 10,
                max_length: int = 256, activation: str = "softmax",
                first_stage=None) -> SweepModel:
    """The :class:`SweepModel` of a model name (``minilm`` or ``smollm2-reranker``)."""
    if name == "minilm":
        return BiEncoderSweep(dataset, qids, device=device)
    if name == "smollm2-reranker":
        return RerankerSweep(dataset, qids, device=device, depth=rerank_depth,
                             max_length=max_length, activation=activation,
                             first_stage=list(first_stage) if first_stage else None)
    raise InputError(f"unknown model {name!r}", fix=f"models: {', '.join(MODEL_NAMES)}")


def run_sweep(model: "str | SweepModel" = "minilm", task: str = "nfcorpus", regimes=None, *,
              max_queries: "int | None" = None, device: str = "cpu", rerank_depth: int = 10,
              max_length: int = 256, activation: str = "softmax", first_stage=None,
              progress: "Callable[[str], None] | None" = None,
              progress_bars: bool = False) -> SweepResult:
    """Run one model under each regime on a task and return the audit table.

    The fp32 forward pass always runs (it is the reference of the correlations); only the
    requested regimes get rows. ``first_stage``: the fp32 MiniLM scores of the same queries
    (``SweepResult.reference_scores`` of a ``minilm`` sweep) for the reranker, to skip
    re-encoding the corpus.
    """
    regimes = parse_regimes(regimes)
    say = progress or (lambda msg: None)
    dataset = load_task(task)
    if isinstance(model, str):
        qids = select_queries(dataset, max_queries)
        say(f"[{model}] {len(qids)} queries, task {task}")
        source = build_model(model, dataset, qids, device=device, rerank_depth=rerank_depth,
                             max_length=max_length, activation=activation, first_stage=first_stage)
    else:
        source = model
    try:
        source.progress_bars = progress_bars  # a bar per forward batch (stderr)
    except AttributeError:  # a model object that takes no attributes: no bars
        pass
    from .regimes import get_regime

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
                scores = source.scores(state, regime)
            res = _evaluate(dataset.qrels, source.qids, source.candidates, scores)
            rho, tau = _correlations(scores, reference)
            extra = {"forward_s": fwd.usage.seconds, "score_s": sc.usage.seconds,
                     "memory_kind": fwd.usage.memory_kind, "device": str(device)}
            rows.append(_row(source.name, regime, res, rho, tau,
                             fwd.usage.seconds + sc.usage.seconds,
                             max(fwd.usage.peak_mib, sc.usage.peak_mib), extra))
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
        "oblivious": "trec_eval", "relevance_level": 1}
    if isinstance(source, RerankerSweep):
        settings.update(rerank_depth=source.depth, max_length=source.max_length,
                        activation=source.activation, first_stage="minilm fp32")
    return SweepResult(source.name, task, tuple(rows), settings, tuple(reference), queries,
                       per_query)


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

def plot_ranges(results: Sequence[SweepResult], path: str) -> str:
    """A PNG of the tie range (max − min) per regime, one bar per measure, one panel per model."""
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
        fig = Figure(figsize=(6.5 * len(results), 4.2))
        axes = fig.subplots(1, len(results), squeeze=False)
        width = 0.8 / len(MEASURES)
        for ax, res in zip(axes[0], results):
            x = np.arange(len(res.rows))
            for j, m in enumerate(MEASURES):
                vals = [getattr(r, f"{_field(m)}_range") for r in res.rows]
                ax.bar(x + (j - (len(MEASURES) - 1) / 2) * width, vals, width, label=m)
            ax.set_xticks(x, [r.regime for r in res.rows], rotation=30, ha="right")
            ax.set_ylabel("range (max − min over tie orders)")
            ax.set_title(f"{res.model} on {res.task} ({res.settings.get('queries')} queries)")
            ax.legend()
            ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        fig.savefig(path, dpi=120)
    return path


def save_results(results: Sequence[SweepResult], out_dir: str, flips: "list | None" = None,
                 plot: bool = True) -> dict:
    """Write ``precision_sweep.csv``, ``precision_sweep.json``, ``precision_sweep.md`` and the PNG."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {"csv": os.path.join(out_dir, "precision_sweep.csv"),
             "json": os.path.join(out_dir, "precision_sweep.json"),
             "markdown": os.path.join(out_dir, "precision_sweep.md")}
    rows = [r for res in results for r in res.rows]
    fieldnames = [f for f in SweepRow.__dataclass_fields__ if f != "metadata"]
    meta_keys = sorted({k for r in rows for k in r.metadata})
    with atomic_write(paths["csv"], newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(fieldnames + meta_keys)
        for r in rows:
            w.writerow([getattr(r, k) for k in fieldnames] + [r.metadata.get(k) for k in meta_keys])
    with atomic_write(paths["json"], encoding="utf-8") as f:
        f.write(dumps_json({"results": [res.to_dict() for res in results],
                            "order_flips": flips or []}, indent=2, default=str))
    with atomic_write(paths["markdown"], encoding="utf-8") as f:
        for res in results:
            f.write(f"### {res.model} on {res.task} ({res.settings.get('queries')} queries)\n\n")
            f.write(format_table(res.rows, markdown=True) + "\n\n")
        if flips:
            f.write("```\n" + describe_flips(flips) + "\n```\n")
    if plot:
        paths["png"] = plot_ranges(results, os.path.join(out_dir, "precision_sweep.png"))
    return paths
