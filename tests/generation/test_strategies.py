"""Selection, template and LLM plug into one protocol, Strategy (generation/protocols.py)."""

from mteb_stratified.generation import (BudgetedCalls, Drafting, LLMJudge, LLMQueryWriter,
                                        LLMVerifier, Selection, Strategy)
from mteb_stratified.llm import ChatEndpoint


def test_every_strategy_is_a_strategy():
    calls = BudgetedCalls(ChatEndpoint(None, "m", "k", provider=object()), None, max_calls=1)
    llm = Drafting(LLMQueryWriter(calls), LLMJudge(calls), LLMVerifier(calls), None, calls=calls)
    assert isinstance(Selection({}), Strategy) and isinstance(llm, Strategy)
    assert not isinstance(object(), Strategy)
