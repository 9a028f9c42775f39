"""The conformance kit, run against the built-in components (and shown to fail on a broken one)."""

import re

import pytest

from mteb_stratified.structure.extractors import Entity
from mteb_stratified.testing import (ExtractorConformance, QueryWriterConformance,
                                     RelevanceJudgeConformance, VerifierConformance)


class TestSpacyExtractorConforms(ExtractorConformance):
    def make_extractor(self):
        from mteb_stratified.structure.registry import make_extractor

        return make_extractor("offline")


class CapitalisedWords:
    """A small real extractor a plugin author might write: capitalised words."""

    name, version = "capitalised", "1"

    def params(self):
        return {"pattern": "[A-Z][a-z]+"}

    def extract(self, texts):
        return [[Entity(w, "") for w in re.findall(r"[A-Z][a-z]+", t)] for t in texts]


class TestAThirdPartyExtractorConforms(ExtractorConformance):
    def make_extractor(self):
        return CapitalisedWords()


def test_the_kit_catches_a_broken_extractor():
    class Broken(CapitalisedWords):
        def extract(self, texts):  # drops empty texts: the output no longer lines up
            return [[Entity(w, "")] for t in texts if t for w in t.split()[:1]]

    class Check(ExtractorConformance):
        def make_extractor(self):
            return Broken()

    with pytest.raises(AssertionError, match="one list per text"):
        Check().test_one_list_of_entities_per_text_in_order()


class _Scripted:
    def __init__(self, answer):
        self.answer = answer

    def complete(self, *, model, messages, temperature, max_tokens):
        from mteb_stratified.llm import Completion

        return Completion(self.answer, 3, 1)


def _calls(answer):
    from mteb_stratified.generation import BudgetedCalls
    from mteb_stratified.llm import ChatEndpoint

    return BudgetedCalls(ChatEndpoint(None, "m", "k", provider=_Scripted(answer)), None,
                         max_calls=50)


class TestLLMWriterConforms(QueryWriterConformance):
    def make(self):
        from mteb_stratified.generation import LLMQueryWriter

        return LLMQueryWriter(_calls('{"query": "does vitamin d help bones"}'))


class TestLLMJudgeConforms(RelevanceJudgeConformance):
    def make(self):
        from mteb_stratified.generation import LLMJudge

        return LLMJudge(_calls('{"relevance": 2}'))


class TestLLMVerifierConforms(VerifierConformance):
    def make(self):
        from mteb_stratified.generation import LLMVerifier

        return LLMVerifier(_calls('{"well_formed": true, "answerable": false}'))
