"""Coverage-aware query generation with verification (needs the ``[llm]`` extra for the LLM
parts and ``[bm25]``/``[structure]`` for pooling).

Layer: above :mod:`mteb_stratified.stratification` (the strata and bins it targets) and
:mod:`mteb_stratified.llm` (the transport and cache of its calls).  :mod:`.loop` ranks the empty
cells, draws seeds, pools, judges and verifies; :mod:`.llm` holds the writer, judge and verifier
over budgeted cached calls; :mod:`.pool` the BM25 + dense pooling; :mod:`.output` the output
folder (generated queries in a split of their own).  Third-party parts honour the protocols of
:mod:`.loop` (check them with :mod:`mteb_stratified.testing`).
"""

from .llm import (PROMPT_VERSION, BudgetedCalls, BudgetExhausted, CallCache, GenerationEndpoint,
                  LLMJudge, LLMQueryWriter, LLMVerifier)
from .loop import (REASONS, GenerationConfig, GenerationResult, QueryWriter, RelevanceJudge,
                   Target, Verifier, generate_queries, rank_targets)
from .output import (GENERATED_SPLIT, check_splits, coverage_markdown, merge_changes,
                     provenance_of, write_dataset)
from .pool import Pooler

__all__ = ["PROMPT_VERSION", "BudgetedCalls", "BudgetExhausted", "CallCache",
           "GenerationEndpoint", "LLMJudge", "LLMQueryWriter", "LLMVerifier", "REASONS",
           "GenerationConfig", "GenerationResult", "QueryWriter", "RelevanceJudge", "Target",
           "Verifier", "coverage_markdown", "generate_queries", "provenance_of", "rank_targets",
           "write_dataset", "Pooler", "GENERATED_SPLIT", "check_splits", "merge_changes"]
