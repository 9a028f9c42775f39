"""The generation loop with planted writers/judges/verifiers (no LLM): targets, verification,
rejection reasons, bookkeeping, output files, determinism, MTEB loading, bad input.

Planted components implement the same Protocols as the LLM ones; they stand in for *bad or good
generations on purpose* (the issue's "planted bad generations"), never for a model's quality.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from mteb_stratified.core import InputError, stratify
from mteb_stratified.core.stats.strata import LEVELS
from mteb_stratified.generation import (REASONS, GenerationConfig, QueryWriter, RelevanceJudge,
                                        Target, Verifier, generate_queries, provenance_of,
                                        rank_targets, write_dataset)
from mteb_stratified.report.generation import coverage_markdown


class PlantedWriter:
    """``plan(target, seed_ids) -> query text or None``; it aims at High and Low J only."""

    alignment_ranks = ("high", "low")

    def __init__(self, plan):
        self.plan, self.seen = plan, []

    def write(self, target, seed_docs, terms=()):
        self.seen.append((target, [d for d, _ in seed_docs]))
        q = self.plan(target, seed_docs)
        return q, json.dumps({"query": q}) if q else "no json here"

    def params(self):
        return {"kind": "planted"}


class PlantedJudge:
    """``plan(query, doc_ids) -> {doc_id: grade}``."""

    def __init__(self, plan):
        self.plan = plan

    def judge(self, query, docs, seeds=()):
        return self.plan(query, [d for d, _ in docs])

    def params(self):
        return {"kind": "planted"}


class PlantedVerifier:
    def __init__(self, verdict=None):
        self.verdict = verdict or {"well_formed": True, "answerable": True}
        self.calls = 0

    def verify(self, query, docs, context=None):
        self.calls += 1
        return dict(self.verdict)

    def params(self):
        return {"kind": "planted"}


def _aligned(target, seed_docs):
    """A query in the seeds' own words for High J, in unrelated words for Low J."""
    if target.alignment == "Low":
        return f"zorblax quibbling {target.cluster} {target.dispersion}"
    return seed_docs[0][1].split(".")[0]


def _seeds_relevant(query, doc_ids):
    return {d: (2 if i < 1 else 1) for i, d in enumerate(doc_ids)}  # every seed relevant


def _run(slice_data, pooler, writer, judge, verifier, **cfg):
    data, art = slice_data
    config = GenerationConfig(**{"target_scc": 1.0, "n_seeds": 1,
                                 "max_candidates": 6, **cfg})
    return generate_queries(data, art, writer=writer, judge=judge, verifier=verifier,
                            pooler=pooler, config=config)


def test_protocols():
    w, j, v = PlantedWriter(_aligned), PlantedJudge(_seeds_relevant), PlantedVerifier()
    assert isinstance(w, QueryWriter) and isinstance(j, RelevanceJudge)
    assert isinstance(v, Verifier)


def test_rank_targets_priority_and_order():
    mass = np.array([0.5, 0.3, 0.2, 0.0])
    counts = np.array([0, 5, 4, 0])
    t = rank_targets(counts, {(0, 0, 2): 1, (2, 0, 0): 4}, mass, 5)
    # cluster 1 is sufficient, cluster 3 has no mass; cluster 0 first (mass 0.5 × deficit 5/5)
    assert {x.cluster for x in t} == {0, 2}
    assert t[0].cluster == 0 and t[0].priority == pytest.approx(0.5)
    assert (0, "Low", "High") not in [x.cell for x in t]  # that cell already holds a query
    assert (2, "Low", "Low") not in [x.cell for x in t]
    c0 = [x.cell for x in t if x.cluster == 0]
    assert c0[0] == (0, "Med", "High") and c0[-1] == (0, "N/A", "N/A")  # J High first
    assert t[-1].priority == pytest.approx(0.2 * 1 / 5)
    # failures demote a cluster: 0.5 / (1 + 19) = 0.025 < 0.04
    t2 = rank_targets(counts, {}, mass, 5, failures={0: 19})
    assert t2[0].cluster == 2
    assert rank_targets(counts, {}, mass, 5, exclude={x.cell for x in t2}) == []


@pytest.mark.slow
def test_planted_good_generations_are_accepted_and_verified(slice_data, pooler, tmp_path):
    data, art = slice_data
    writer = PlantedWriter(_aligned)
    res = _run(slice_data, pooler, writer, PlantedJudge(_seeds_relevant), PlantedVerifier(),
               max_attempts=1)
    counts = res.counts()
    assert counts.accepted >= 1
    assert res.stop_reason == "6 candidates written (max_candidates)"
    for rec in res.accepted:
        # the stratum is recomputed independently here: it must be the targeted cell
        st = stratify({"q": rec.qrels}, _weights(art, data), query_entities={
            "q": art.extract_entities(rec.query)}, doc_entities=_doc_ents(art),
            bins=_bins(art, data))
        landed = [int(st.primary[0]), LEVELS[int(st.dispersion_bin[0])],
                  LEVELS[int(st.alignment_bin[0])]]
        assert landed == rec.landed == rec.target
        assert rec.status == "accepted" and rec.verifier["answerable"]
    # every rejection has a known reason, and coverage only grew through accepted queries
    assert all(c.reason in REASONS for c in res.candidates if c.status == "rejected")
    before, after = res.coverage_before, res.coverage_after
    assert after.n_queries == before.n_queries + counts.accepted
    assert after.cluster.msc >= before.cluster.msc
    new_clusters = {r.target[0] for r in res.accepted}
    assert after.cluster.covered - before.cluster.covered <= len(new_clusters)
    # output: the augmented BEIR dataset marks origin and keeps provenance
    out = str(tmp_path / "aug")
    written = write_dataset(out, data, res, provenance=provenance_of(
        writer, PlantedJudge(None), PlantedVerifier(), GenerationConfig(), art),
        markdown=lambda report: coverage_markdown(report, REASONS))  # as the CLI writes it
    rows = [json.loads(x) for x in open(os.path.join(out, "queries.jsonl"))]
    gen = [r for r in rows if r["origin"] == "generated"]
    assert len(gen) == counts.accepted
    source = [json.loads(x)["_id"] for x in open(os.path.join(data.folder, "queries.jsonl"))]
    assert [r["_id"] for r in rows if r["origin"] == "original"] == source  # every split's
    meta = gen[0]["metadata"]
    for key in ("target", "seed_docs", "terms", "seed", "verifier", "generator", "judge",
                "config"):
        assert key in meta
    from mteb_stratified.io import load_beir
    # every original split as it was, byte for byte; the generated queries in their own split
    for split in ("test", "dev"):
        assert (open(os.path.join(out, "qrels", f"{split}.tsv"), "rb").read()
                == open(os.path.join(data.folder, "qrels", f"{split}.tsv"), "rb").read())
    assert load_beir(out, "test").qrels == data.qrels
    only = load_beir(out, "generated")
    assert set(only.qrels) == {r["_id"] for r in gen}
    assert only.generated() == sorted(only.qrels) and load_beir(out, "test").generated() == []
    # merging is explicit: the merged split holds both, each query keeps its origin
    merged = str(tmp_path / "merged")
    paths = write_dataset(merged, data, res, provenance={}, merge_into="test")
    both = load_beir(merged, "test")
    assert set(both.qrels) == set(data.qrels) | {r["_id"] for r in gen}
    assert both.generated() == sorted(r["_id"] for r in gen)
    assert paths["splits"]["merged_into"] == "test" and "now holds its 12 original queries" \
        in paths["splits"]["merge_changes"]
    assert (open(os.path.join(merged, "qrels", "dev.tsv"), "rb").read()
            == open(os.path.join(data.folder, "qrels", "dev.tsv"), "rb").read())
    cov = json.load(open(os.path.join(out, "coverage.json")))
    assert cov["counts"] == counts.to_dict() and cov["after"] == after.to_dict()
    assert "MSC" in open(os.path.join(out, "coverage.md")).read()
    # …and it loads straight into a tie-aware MTEB task (the generated queries as a split)
    pytest.importorskip("mteb")
    from mteb_stratified.adapters.mteb.tasks import beir_task
    task = beir_task(out, name="StratifiedNFCorpusGenerated", split="generated")
    task.load_data()
    split = task.dataset["default"]["generated"]
    assert set(split["queries"]["id"]) == set(split["relevant_docs"]) == {r["_id"] for r in gen}
    assert len(split["corpus"]) == len(data.corpus)


def _weights(art, data):
    from mteb_stratified.stratification import cluster_weights
    return cluster_weights(art, data.corpus)


def _bins(art, data):
    from mteb_stratified.stratification import corpus_bins
    return corpus_bins(art)


def _doc_ents(art):
    return {d: {art.canonical(e) for e in ents} for d, ents in art.doc_entities.items()}


@pytest.mark.slow
@pytest.mark.parametrize("case,reason", [
    ("no_relevant", "no_relevant_document"),
    ("wrong_cell", "wrong_cell"),
    ("not_answerable", "not_answerable"),
    ("malformed", "not_well_formed"),
    ("no_query", "no_query"),
    ("duplicate", "duplicate_query"),
])
def test_planted_bad_generations_never_enter_the_dataset(slice_data, pooler, tmp_path, case,
                                                         reason):
    data, art = slice_data
    original = next(iter(data.queries.values()))
    verdict = {"not_answerable": {"well_formed": True, "answerable": False},
               "malformed": {"well_formed": False, "answerable": True}}.get(case)
    writer = PlantedWriter({"no_query": lambda t, s: None,
                            "duplicate": lambda t, s: original.upper()}.get(case, _aligned))
    if case == "no_relevant":
        judge = PlantedJudge(lambda q, ids: dict.fromkeys(ids, 0))
    elif case == "wrong_cell":
        # relevant: only documents *outside* the target cluster
        w = _weights(art, data)
        m = w.to_csr()

        def other(q, ids, target_of=writer):
            c = target_of.seen[-1][0].cluster
            return {d: (2 if m[w.doc_index(d), c] == 0 else 0) for d in ids}
        judge = PlantedJudge(other)
    else:
        judge = PlantedJudge(_seeds_relevant)
    verifier = PlantedVerifier(verdict)
    res = _run(slice_data, pooler, writer, judge, verifier, max_attempts=1, no_json_abort=10**6)
    if case == "wrong_cell":
        res_reasons = {c.reason for c in res.candidates}
        assert "wrong_cell" in res_reasons and "accepted" not in {c.status for c in
                                                                  res.candidates}
    elif case in ("not_answerable", "malformed"):  # candidates that miss their cell stop earlier
        assert reason in {c.reason for c in res.candidates} <= {reason, "wrong_cell"}
    else:
        assert {c.reason for c in res.candidates} == {reason}
    assert res.accepted == ()
    assert res.coverage_after == res.coverage_before
    if case not in ("not_answerable", "malformed"):
        assert verifier.calls == 0  # the LLM check runs only after the cell check passes
    out = str(tmp_path / "aug")
    write_dataset(out, data, res, provenance={})
    rows = [json.loads(x) for x in open(os.path.join(out, "queries.jsonl"))]
    assert all(r["origin"] == "original" for r in rows)
    assert os.path.getsize(os.path.join(out, "qrels", "generated.tsv")) == len(
        "query-id\tcorpus-id\tscore\n")
    cands = [json.loads(x) for x in open(os.path.join(out, "candidates.jsonl"))]
    assert len(cands) == len(res.candidates) and all(c["status"] == "rejected" for c in cands)


@pytest.mark.slow
def test_same_seed_same_output_and_seed_changes_seeds(slice_data, pooler):
    def run(seed):
        w = PlantedWriter(_aligned)
        r = _run(slice_data, pooler, w, PlantedJudge(_seeds_relevant), PlantedVerifier(),
                 seed=seed, max_attempts=1)
        return r, w.seen
    a, seen_a = run(0)
    b, seen_b = run(0)
    assert a.candidates == b.candidates and seen_a == seen_b
    _, seen_c = run(1)
    assert [s for _, s in seen_c] != [s for _, s in seen_a]


@pytest.mark.slow
def test_no_json_model_stops_with_a_clear_error(slice_data, pooler):
    with pytest.raises(InputError, match="no JSON query in 3 answers in a row"):
        _run(slice_data, pooler, PlantedWriter(lambda t, s: None), PlantedJudge(_seeds_relevant),
             PlantedVerifier())


def test_config_errors():
    with pytest.raises(InputError, match="n_min"):
        GenerationConfig(n_min=0)
    with pytest.raises(InputError, match="max_attempts"):
        GenerationConfig(max_attempts=0)
    with pytest.raises(InputError, match="target_msc"):
        GenerationConfig(target_msc=1.5)


def test_target_cell():
    assert Target(3, "Low", "High").cell == (3, "Low", "High")


@pytest.mark.slow
def test_pooler_is_deterministic_and_keeps_seeds(pooler, slice_data):
    data, _ = slice_data
    seeds = sorted(data.corpus)[:2]
    a = pooler.pool("statin breast cancer", seeds)
    assert a == pooler.pool("statin breast cancer", seeds)
    assert a["pool"][:2] == seeds and len(a["pool"]) <= 4
    assert len(a["bm25"]) <= 2 and len(a["dense"]) == 2
    assert set(a["bm25"]) <= set(data.corpus) and set(a["dense"]) <= set(data.corpus)


def test_coverage_follows_a_two_bin_grid():
    """The generator's coverage uses the bins' grid (2 x 2 cells), not the default 3 x 3."""
    from mteb_stratified.core.stats.cells import CellGrid
    from mteb_stratified.generation.state import CoverageState

    st = CoverageState([0, 1], [0, 1], [1, 0], np.array([0.5, 0.5]), {0: "a", 1: "b"}, 1,
                       grid=CellGrid(2, 2))
    cov = st.coverage()
    assert cov.cell.weighted_units == 8 and cov.cell.covered == 2


def test_a_rejected_request_is_an_endpoint_error():
    from mteb_stratified.core.errors import EndpointError
    from mteb_stratified.generation import BudgetedCalls
    from mteb_stratified.llm import ChatEndpoint, Permanent

    class Rejects:
        def complete(self, **kw):
            raise Permanent("HTTP 404: model not found")

    calls = BudgetedCalls(ChatEndpoint(None, "nope", "k", provider=Rejects()), None, max_calls=3)
    with pytest.raises(EndpointError, match="rejected a write request") as err:
        calls.chat("write", [{"role": "user", "content": "x"}], max_tokens=8)
    assert "--model" in str(err.value)
