"""Coverage-aware query generation with LLM verification (needs the ``[llm]`` extra for the
LLM parts and ``[bm25]``/``[structure]`` for pooling)."""

from .llm import (PROMPT_VERSION, BudgetedCalls, BudgetExhausted, CallCache, GenerationEndpoint,
                  LLMJudge, LLMQueryWriter, LLMVerifier)
from .loop import (REASONS, GenerationConfig, GenerationResult, QueryWriter, RelevanceJudge,
                   Target, Verifier, coverage_markdown, generate_queries, provenance_of,
                   rank_targets, write_dataset)
from .pool import Pooler

__all__ = ["PROMPT_VERSION", "BudgetedCalls", "BudgetExhausted", "CallCache",
           "GenerationEndpoint", "LLMJudge", "LLMQueryWriter", "LLMVerifier", "REASONS",
           "GenerationConfig", "GenerationResult", "QueryWriter", "RelevanceJudge", "Target",
           "Verifier", "coverage_markdown", "generate_queries", "provenance_of", "rank_targets",
           "write_dataset", "Pooler"]
