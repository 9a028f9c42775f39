"""Conformance test kit for plugin authors (in the spirit of ``pyterrier.testing``).

Subclass a base in your own test suite and say how to build your component; pytest (or
unittest's discovery through pytest) runs every inherited ``test_*`` check against it::

    # tests/test_my_extractor.py
    from mteb_stratified.testing import ExtractorConformance

    class TestMyExtractor(ExtractorConformance):
        def make_extractor(self):
            return MyExtractor(model="tiny")

* :class:`ExtractorConformance` — an entity extractor honours
  :class:`~mteb_stratified.structure.extractors.EntityExtractor` (identity, JSON-able settings,
  one list of :class:`~mteb_stratified.structure.extractors.Entity` per text in order, empty
  and unusual texts, determinism, the optional ``failures`` record, names the normaliser
  accepts); register it under the ``mteb_stratified.extractors`` entry-point group
  (:mod:`mteb_stratified.structure.registry`);
* :class:`QueryWriterConformance`, :class:`RelevanceJudgeConformance`,
  :class:`VerifierConformance` — the three parts of coverage-aware generation honour the
  protocols of :mod:`mteb_stratified.generation.protocols`.

The checks use plain ``assert`` (these are tests, not input validation) and import nothing
heavy; they are themselves tested against the built-in components.
"""

from __future__ import annotations

import json

__all__ = ["ExtractorConformance", "QueryWriterConformance", "RelevanceJudgeConformance",
           "VerifierConformance", "SAMPLE_TEXTS", "SAMPLE_DOCS"]

#: Texts every extractor must handle: ordinary prose, an empty string, punctuation only,
#: non-ASCII, and a long text.
SAMPLE_TEXTS = (
    "Vitamin D supplements raised bone mineral density in older women.",
    "",
    "...",
    "Über die Wirkung von Grüntee auf das Körpergewicht (EGCG).",
    "Statin use and breast cancer mortality in a Finnish cohort. " * 40,
)
#: ``(doc_id, text)`` pairs for the generation parts.
SAMPLE_DOCS = (
    ("d1", "Vitamin D and bone density. Supplements raised bone mineral density in older women."),
    ("d2", "Green tea catechins and weight loss. EGCG had no effect on body weight."),
)


def _jsonable(obj) -> bool:
    try:
        json.dumps(obj, sort_keys=True)
        return True
    except (TypeError, ValueError):
        return False


class ExtractorConformance:
    """Checks that an entity extractor honours the ``EntityExtractor`` protocol."""

    def make_extractor(self):
        """Return the extractor under test (override)."""
        raise NotImplementedError("override make_extractor() to return your extractor")

    def _extract(self, texts):
        return self.make_extractor().extract(list(texts))

    def test_is_an_entity_extractor(self):
        from mteb_stratified.structure.extractors import EntityExtractor

        ex = self.make_extractor()
        assert isinstance(ex, EntityExtractor), "needs name, version, params() and extract()"
        assert isinstance(ex.name, str) and ex.name, "name: a non-empty string"
        assert isinstance(ex.version, str) and ex.version, "version: a non-empty string"

    def test_params_are_json_and_stable(self):
        ex = self.make_extractor()
        p = ex.params()
        assert isinstance(p, dict) and _jsonable(p), "params() must be a JSON-able dict"
        assert ex.params() == p == self.make_extractor().params(), "params() must be stable"

    def test_one_list_of_entities_per_text_in_order(self):
        from mteb_stratified.structure.extractors import Entity

        out = self._extract(SAMPLE_TEXTS)
        assert isinstance(out, list) and len(out) == len(SAMPLE_TEXTS), \
            "extract() returns one list per text"
        for ents in out:
            assert isinstance(ents, list)
            for e in ents:
                assert isinstance(e, Entity), f"{e!r} is not an Entity"
                assert isinstance(e.name, str) and isinstance(e.description, str)
        assert self._extract([SAMPLE_TEXTS[0]])[0] == out[0], "each text independently"
        assert self._extract(list(reversed(SAMPLE_TEXTS))) == list(reversed(out)), \
            "the order of the output follows the input"

    def test_empty_input(self):
        assert self._extract([]) == []
        out = self._extract([""])
        assert len(out) == 1 and isinstance(out[0], list), "an empty text gives one list"

    def test_deterministic(self):
        assert self._extract(SAMPLE_TEXTS) == self._extract(SAMPLE_TEXTS), \
            "the same texts must give the same entities (the artifact is reproducible)"

    def test_failures_are_indices_with_reasons(self):
        ex = self.make_extractor()
        ex.extract(list(SAMPLE_TEXTS))
        failures = getattr(ex, "failures", {}) or {}
        assert isinstance(failures, dict)
        for i, why in failures.items():
            assert isinstance(i, int) and 0 <= i < len(SAMPLE_TEXTS) and isinstance(why, str)

    def test_usable_by_the_pipeline_normaliser(self):
        from mteb_stratified.structure.normalise import normalised_names

        for ents in self._extract(SAMPLE_TEXTS):
            names = normalised_names(ents, {})
            assert all(isinstance(n, str) and n for n in names)


def _target():
    from mteb_stratified.core.stats.cells import GRID
    from mteb_stratified.generation.protocols import Target

    return Target(0, GRID.dispersion_levels[0], GRID.alignment_levels[-1], priority=1.0,
                  label="vitamin d / bone")


class _PartConformance:
    attr = ""

    def make(self):
        raise NotImplementedError(f"override make() to return your {self.attr}")

    def test_params_are_json(self):
        p = self.make().params()
        assert isinstance(p, dict) and _jsonable(p), "params() must be a JSON-able dict " \
                                                     "(it is recorded with every query)"


class QueryWriterConformance(_PartConformance):
    """Checks the ``QueryWriter`` protocol: ``write(target, seed_docs, terms) -> (query, raw)``."""

    attr = "query writer"

    def test_is_a_query_writer(self):
        from mteb_stratified.generation.protocols import QueryWriter

        assert isinstance(self.make(), QueryWriter)

    def test_writes_a_query_or_none_with_the_raw_answer(self):
        out = self.make().write(_target(), list(SAMPLE_DOCS), ["vitamin d", "bone density"])
        assert isinstance(out, tuple) and len(out) == 2, "write() returns (query or None, raw)"
        query, raw = out
        assert query is None or (isinstance(query, str) and query.strip())
        assert isinstance(raw, str)


class RelevanceJudgeConformance(_PartConformance):
    """Checks the ``RelevanceJudge`` protocol: ``judge(query, docs, seeds) -> {doc_id: grade}``
    with each grade 0/1/2/None, or a ``(grade, rule)`` pair naming the rule that judged it."""

    attr = "relevance judge"

    def test_is_a_relevance_judge(self):
        from mteb_stratified.generation.protocols import RelevanceJudge

        assert isinstance(self.make(), RelevanceJudge)

    def test_grades_every_document(self):
        grades = self.make().judge("vitamin d bones", list(SAMPLE_DOCS),
                                   seeds=(SAMPLE_DOCS[0][0],))
        assert set(grades) == {d for d, _ in SAMPLE_DOCS}, "one grade per pooled document"
        for g in grades.values():
            if isinstance(g, tuple):
                assert len(g) == 2 and isinstance(g[1], str) and g[1], "(grade, rule name)"
                g = g[0]
            assert g is None or g in (0, 1, 2), "grades 0/1/2 or None"


class VerifierConformance(_PartConformance):
    """Checks the ``Verifier`` protocol: ``verify(query, docs, context) -> {"well_formed",
    "answerable", ...}`` (``context``: the candidate's seeds, pool, qrels and entities)."""

    attr = "verifier"

    def test_is_a_verifier(self):
        from mteb_stratified.generation.protocols import Verifier

        assert isinstance(self.make(), Verifier)

    def test_verdict_has_both_flags(self):
        v = self.make().verify("does vitamin d help bones", list(SAMPLE_DOCS), context={
            "seed_docs": [SAMPLE_DOCS[0][0]], "qrels": {SAMPLE_DOCS[0][0]: 2},
            "pool": {"pool": [d for d, _ in SAMPLE_DOCS], "bm25": [], "dense": []},
            "query_entities": ["vitamin d"]})
        assert isinstance(v, dict) and {"well_formed", "answerable"} <= set(v)
        assert all(v[k] is None or isinstance(v[k], bool) for k in ("well_formed", "answerable"))
