"""Selection, template and LLM plug into one protocol, Strategy (generation/protocols.py)."""

from mteb_stratified.generation import (BudgetedCalls, Drafting, LLMJudge, LLMQueryWriter,
                                        LLMVerifier, Selection, Strategy)
from mteb_stratified.llm import ChatEndpoint


def test_every_strategy_is_a_strategy():
    calls = BudgetedCalls(ChatEndpoint(None, "m", "k", provider=object()), None, max_calls=1)
    llm = Drafting(LLMQueryWriter(calls), LLMJudge(calls), LLMVerifier(calls), None, calls=calls)
    assert isinstance(Selection({}), Strategy) and isinstance(llm, Strategy)
    assert not isinstance(object(), Strategy)


def test_the_writer_names_the_target_leafs_label_unless_its_j_is_low():
    """The generation prompt speaks in the leaf's distinctive-terms label (structure/terms.py),
    except where the query must avoid the documents' terms (low J, or no J)."""
    from mteb_stratified.core.stats.cells import GRID
    from mteb_stratified.generation.protocols import Target

    calls = BudgetedCalls(ChatEndpoint(None, "m", "k", provider=object()), None, max_calls=1)
    writer = LLMQueryWriter(calls)
    docs = [("MED-1", "Green tea catechins. Tea and coffee drinkers.")]
    dispersion = GRID.dispersion_levels[0]
    label = "tea / coffee / caffeine"
    for alignment in GRID.alignment_levels:
        target = Target(3, dispersion, alignment, label=label)
        text = writer.prompt(target, docs, ["green tea"])
        named = f'the topic "{label}"' in text
        assert named == (target.rank("alignment") not in ("low", "na")), alignment
        assert text.startswith("Document 1:")
    assert "topic \"" not in writer.prompt(Target(3, dispersion, GRID.alignment_levels[-1]),
                                          docs, ["green tea"])
