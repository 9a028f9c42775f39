"""Coverage-aware query generation with verification (needs the ``[llm]`` extra for the LLM
parts and ``[bm25]``/``[structure]`` for pooling).

Layer: above :mod:`mteb_stratified.stratification` (the strata and bins it targets) and
:mod:`mteb_stratified.llm` (the transport and cache of its calls).  :mod:`.protocols` holds what
plugs in: a :class:`Strategy` (:mod:`.strategies`: :class:`Selection` of real queries,
:class:`Drafting` over a writer, judge and verifier) and the three parts' protocols (check a
third-party part with :mod:`mteb_stratified.testing`).  :mod:`.loop` ranks the empty cells,
draws seeds, pools, judges and verifies (its parts: :mod:`.config`, :mod:`.state`,
:mod:`.seeds`, :mod:`.candidates`, :mod:`.rounds`, :mod:`.result`); :mod:`.select` selects
real queries; :mod:`.offline` and :mod:`.llm` hold the offline and the LLM writer, judge and
verifier; :mod:`.pool` the BM25 + dense pooling; :mod:`.gate` the validity gate;
:mod:`.output` the output folder (the added queries in a split of their own; its BEIR files
through :func:`mteb_stratified.io.beir.write_beir`, its ``coverage.md`` by
:mod:`mteb_stratified.report.generation`); :mod:`.runner` the whole ``generate`` command as
one call, :func:`run` (a :class:`RunConfig` in, an :class:`Outcome` out).
"""

from .llm import (PROMPT_VERSION, BudgetedCalls, BudgetExhausted, CallCache, GenerationEndpoint,
                  LLMJudge, LLMQueryWriter, LLMVerifier)
from .candidates import Candidate
from .config import REASONS, GenerationConfig
from .loop import generate_queries
from .output import GENERATED_SPLIT, check_splits, merge_changes, provenance_of, write_dataset
from .pool import Pooler
from .protocols import QueryWriter, RelevanceJudge, Strategy, Target, Verifier
from .result import GenerationResult
from .runner import CandidateBar, LLMOptions, Outcome, RunConfig, run
from .state import rank_targets
from .strategies import Drafting, Selection

__all__ = ["PROMPT_VERSION", "BudgetedCalls", "BudgetExhausted", "CallCache",
           "GenerationEndpoint", "LLMJudge", "LLMQueryWriter", "LLMVerifier", "REASONS",
           "GenerationConfig", "GenerationResult", "QueryWriter", "RelevanceJudge", "Target",
           "Verifier", "Strategy", "Selection", "Drafting", "generate_queries", "provenance_of",
           "rank_targets", "write_dataset", "Pooler", "GENERATED_SPLIT", "check_splits",
           "merge_changes", "run", "RunConfig", "LLMOptions", "Outcome", "CandidateBar",
           "Candidate"]
