"""The offline writer, judge and verifier (``generate`` without ``--base-url``, issue #17), on a
held-out kind of corpus: the 160-document NFCorpus slice with its own structure.

Everything is real: the slice's own structure and extractor, the packaged MiniLM, BM25.  The
coverage, the cells and the writer's and judge's rules are recomputed here from the written
folder, independently of the loop's bookkeeping.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace

import numpy as np
import pytest

from mteb_stratified.cli import main as cli_main
from mteb_stratified.io import bundled_path
from mteb_stratified.generation import REASONS
from mteb_stratified.testing import (QueryWriterConformance, RelevanceJudgeConformance,
                                     VerifierConformance)

pytestmark = pytest.mark.slow

FILES = ("queries.jsonl", "candidates.jsonl", "qrels/test.tsv", "qrels/dev.tsv",
         "qrels/generated.tsv", "coverage.json", "coverage.md", "corpus.jsonl.gz")


def _generate(slice_paths, out, *extra) -> int:
    folder, structure = slice_paths
    return cli_main.main(["generate", "--dataset", folder, "--structure", structure, "--out",
                          str(out), "--writer", "template", "--no-progress", "--json", *extra])


@pytest.fixture(scope="module")
def run0(slice_paths, tmp_path_factory):
    """The offline run with --seed 0 on the slice: (folder, exit status)."""
    out = tmp_path_factory.mktemp("offline") / "seed0"
    return str(out), _generate(slice_paths, out, "--seed", "0")


@pytest.fixture(scope="module")
def written(run0, slice_data):
    """What the run wrote, re-read: the augmented dataset, the generated rows, coverage.json,
    every query's entities by the artifact's extractor, and the strata recomputed from them."""
    from mteb_stratified.core import stratify
    from mteb_stratified.io import load_beir
    from mteb_stratified.stratification import cluster_weights, corpus_bins

    out, code = run0
    assert code == 0
    _, art = slice_data
    # coverage counts the original and the generated queries together: their two splits
    original, generated = load_beir(out, "test"), load_beir(out, "generated", corpus=False)
    data = replace(original, qrels={**original.qrels, **generated.qrels},
                   queries={**original.queries, **generated.queries})
    qids = sorted(data.qrels)
    ents = dict(zip(qids, art.extract_entities_batch([data.queries[q] for q in qids])))
    weights = cluster_weights(art, data.corpus)
    strata = stratify(data.qrels, weights, query_entities=ents,
                      doc_entities=art.canonical_doc_entities(), bins=corpus_bins(art))
    rows = [json.loads(x) for x in open(os.path.join(out, "queries.jsonl"), encoding="utf-8")]
    gen = [r for r in rows if r["origin"] == "generated"]
    cov = json.load(open(os.path.join(out, "coverage.json"), encoding="utf-8"))
    return {"out": out, "data": data, "gen": gen, "rows": rows, "coverage": cov,
            "entities": ents, "strata": strata, "weights": weights}


@pytest.fixture(scope="module")
def neighbours(slice_data, tmp_path_factory):
    """The offline name index of the slice, built here (not the run's cached copy)."""
    from mteb_stratified.generation.offline import EntityNeighbours
    from mteb_stratified.structure import embedding_model_of
    _, art = slice_data
    return EntityNeighbours(art, cache_dir=str(tmp_path_factory.mktemp("names")),
                            model=embedding_model_of(art))


def _cell(strata, qid) -> list:
    """The landed cell ``[cluster, Δ level, J level]`` of ``qid`` in the recomputed strata."""
    i = list(strata.queries).index(qid)
    return list(strata.grid.label_of(int(strata.primary[i]), int(strata.dispersion_bin[i]),
                                     int(strata.alignment_bin[i])))


# ---------------------------------------------------------------------------------------------
# 1. the held-out corpus reaches the targets, and only verified queries count
# ---------------------------------------------------------------------------------------------
def test_template_output_is_labelled_and_gated(written):
    """--writer template: a smoke test by its own label; its judge is measured against the
    human qrels on real pairs, and the verdict follows the thresholds."""
    from mteb_stratified.generation.gate import KAPPA_MIN
    from mteb_stratified.generation.output import SMOKE_TEST

    cov = written["coverage"]
    assert cov["label"] == SMOKE_TEST
    assert all(r["metadata"]["label"] == SMOKE_TEST for r in written["gen"])
    gate = cov["gate"]
    j = gate["judge"]
    assert j["measured"] is True and 0 < j["pairs"] <= j["queries"] * j["per_query"]
    assert j["tp"] + j["fp"] + j["fn"] + j["tn"] == j["pairs"]
    so = gate["system_order"]
    assert so["systems"] == ["BM25", "MiniLM"]
    fails = (j["kappa"] is not None and j["kappa"] < KAPPA_MIN) or (
        so["kendall_tau"] is not None and so["kendall_tau"] < 0)
    assert gate["passed"] is (not fails)
    assert gate["trivial_baseline"]["documents"] == len(written["gen"])
    md = open(os.path.join(written["out"], "coverage.md"), encoding="utf-8").read()
    assert md.startswith(f"**{SMOKE_TEST}**") and "## Validity gate" in md


def test_held_out_corpus_reaches_the_targets(written):
    cov = written["coverage"]
    after, targets = cov["after"], cov["targets"]
    assert cov["stop_reason"] == "coverage targets met"
    assert targets["msc"] == pytest.approx(0.9 * targets["ceiling_msc"])
    assert after["cluster"]["msc"] >= 0.9 * targets["ceiling_msc"] - 1e-12
    assert after["cluster"]["msc"] >= targets["msc"]
    assert after["cluster"]["scc"] >= 0.5 and targets["scc"] == 0.5
    assert after["cluster"]["msc"] > cov["before"]["cluster"]["msc"]
    assert cov["usage"] == {}  # the offline path makes no LLM call


def test_only_verified_queries_count(written, slice_data):
    """coverage.json's "after" is the coverage of the written queries, recomputed here."""
    from mteb_stratified.core import cell_coverage, cluster_coverage

    _, art = slice_data
    st, cov = written["strata"], written["coverage"]
    mass = written["weights"].primary_share()
    labels = {int(c): lab for c, lab in art.cluster_labels.items()}
    cl = cluster_coverage(st.primary, mass, labels=labels)
    ce = cell_coverage(st.primary, st.dispersion_bin, st.alignment_bin, mass, labels=labels,
                       grid=st.grid)
    assert cov["after"] == {
        "n_queries": st.n_queries,
        "cluster": {"msc": cl.msc, "scc": cl.scc, "covered": cl.covered,
                    "weighted_units": cl.weighted_units, "weightless": cl.weightless,
                    "uncovered_mass": cl.uncovered_mass},
        "cell": {"msc": ce.msc, "scc": ce.scc, "covered": ce.covered,
                 "weighted_units": ce.weighted_units}}
    # the schema's meaning: covered / weighted_units is MSC, at both levels
    for level in ("cluster", "cell"):
        after = cov["after"][level]
        assert after["covered"] / after["weighted_units"] == pytest.approx(after["msc"])
    gen = written["gen"]
    assert cov["after"]["n_queries"] == cov["before"]["n_queries"] + len(gen)
    # the written generated queries are exactly the accepted candidates
    cands = [json.loads(x) for x in open(os.path.join(written["out"], "candidates.jsonl"))]
    accepted = [c for c in cands if c["status"] == "accepted"]
    assert [c["query"] for c in accepted] == [r["text"] for r in gen]
    assert all(c["reason"] in REASONS for c in cands if c["status"] == "rejected")
    assert cov["counts"]["accepted"] == len(gen) < len(cands)
    for row in gen:
        meta = row["metadata"]
        assert _cell(st, row["_id"]) == meta["landed"] == meta["target"]
        assert sorted(written["entities"][row["_id"]]) == meta["query_entities"]
        verdict = meta["verdict"]
        assert verdict["well_formed"] is True and verdict["answerable"] is True
        for check in verdict["checks"]:
            assert isinstance(check["reason"], str) and check["reason"]
            assert check.get("required", True) is False or check["passed"] is True


# ---------------------------------------------------------------------------------------------
# 2. determinism
# ---------------------------------------------------------------------------------------------
def test_same_seed_same_bytes_another_seed_other_queries(run0, slice_paths, tmp_path):
    out0, _ = run0
    again, other = tmp_path / "again", tmp_path / "seed1"
    assert _generate(slice_paths, again, "--seed", "0") == 0
    for name in FILES:
        with open(os.path.join(out0, name), "rb") as a, open(again / name, "rb") as b:
            assert a.read() == b.read(), name
    assert _generate(slice_paths, other, "--seed", "1") == 0
    with open(os.path.join(out0, "queries.jsonl"), "rb") as a:
        assert a.read() != (other / "queries.jsonl").read_bytes()


# ---------------------------------------------------------------------------------------------
# 3. provenance: offline-synthetic parts, every qrel with its rule
# ---------------------------------------------------------------------------------------------
def test_provenance_and_qrel_rules(written, slice_data):
    from mteb_stratified.io import load_beir

    _, art = slice_data
    doc_ents = art.canonical_doc_entities()
    generated = load_beir(written["out"], "generated", corpus=False).qrels
    assert set(generated) == {r["_id"] for r in written["gen"]}
    rules_seen = set()
    for row in written["gen"]:
        meta = row["metadata"]
        for part in ("generator", "judge", "verifier"):
            assert meta[part]["kind"] == "offline-synthetic"
        qrels, rules = generated[row["_id"]], meta["qrel_rules"]
        assert set(rules) == set(qrels)
        ents = written["entities"][row["_id"]]
        for d, grade in qrels.items():
            rules_seen.add(rules[d])
            if d in meta["seed_docs"]:
                assert (grade, rules[d]) == (2, "seed")
            else:
                assert (grade, rules[d]) == (1, "entity-containment")
                assert ents and ents <= doc_ents.get(d, set())
        assert set(meta["seed_docs"]) <= set(qrels)
    assert "seed" in rules_seen


# ---------------------------------------------------------------------------------------------
# 4. the writer's rules hold on the accepted queries
# ---------------------------------------------------------------------------------------------
def test_writer_rules_on_accepted_queries(written, slice_data, neighbours):
    _, art = slice_data
    doc_ents = art.canonical_doc_entities()
    levels = set()
    for row in written["gen"]:
        meta = row["metadata"]
        ents = written["entities"][row["_id"]]
        assert ents, row["text"]
        seeds = set().union(*(doc_ents.get(d, set()) for d in meta["seed_docs"]))
        level = meta["landed"][2]
        levels.add(level)
        assert level in ("High", "Low"), (row["text"], level)  # the levels the writer aims at
        if level == "High":
            assert ents <= seeds, (row["text"], ents, seeds)
            continue
        for d in meta["qrel_rules"]:
            assert not ents & doc_ents.get(d, set()), (row["text"], d)
        graph_seeds = sorted(seeds & set(neighbours.names))
        assert graph_seeds, row["text"]
        # each entity is a neighbour of a seed entity: cos ≥ τ, or the same cluster
        sims = neighbours.vectors(sorted(ents)) @ neighbours.vectors(graph_seeds).T
        cluster = dict(zip(neighbours.names, neighbours.cluster.tolist()))
        same = np.array([[cluster.get(e) == cluster[g] for g in graph_seeds]
                         for e in sorted(ents)])
        assert ((sims >= neighbours.threshold) | same).any(axis=1).all(), (row["text"], ents)
    assert levels == {"High", "Low"}


# ---------------------------------------------------------------------------------------------
# 5. the judge's rule, on real documents of the slice
# ---------------------------------------------------------------------------------------------
def _pair_query(art, doc_ents):
    """A two-entity query ``"<a> and <b>"`` whose extracted entities are exactly {a, b}, with a
    document carrying both, one carrying ``a`` but not ``b``, and a one-entity query of ``a``."""
    from mteb_stratified.generation.offline import TEMPLATES

    carriers = sorted(doc_ents)
    for d in carriers:
        names = sorted(doc_ents[d])
        for i, a in enumerate(names):
            others = [x for x in carriers if a in doc_ents[x] and x != d]
            for b in names[i + 1:]:
                if set(a.split()) & set(b.split()):
                    continue
                half = [x for x in others if b not in doc_ents[x]]
                if not half:
                    continue
                text, single = TEMPLATES[2][0].format(a, b), TEMPLATES[1][2].format(a)
                if art.extract_entities(text) == {a, b} and art.extract_entities(single) == {a}:
                    return text, single, d, half[0], (a, b)
    raise AssertionError("the slice has no two-entity query a document carries")


@pytest.fixture(scope="module")
def pair(slice_data):
    _, art = slice_data
    return _pair_query(art, art.canonical_doc_entities())


def test_judge_rule_on_real_documents(slice_data, pair):
    from mteb_stratified.generation.offline import OfflineJudge
    from mteb_stratified.io.corpus_text import doc_text

    data, art = slice_data
    text, single, both, half, _ = pair
    seed = next(d for d in sorted(data.corpus) if d not in (both, half))
    docs = [(d, doc_text(data.corpus[d])) for d in (seed, both, half)]
    judge = OfflineJudge(art)
    assert judge.judge(text, docs, seeds=(seed,)) == {
        seed: (2, "seed"), both: (1, "entity-containment"), half: (0, "entity-containment")}
    # a one-entity query: every non-seed document that carries its entity is relevant
    assert judge.judge(single, docs, seeds=(seed,)) == {
        seed: (2, "seed"), both: (1, "entity-containment"), half: (1, "entity-containment")}
    assert judge.judge(text, docs, seeds=(both, half)) == {
        seed: (0, "entity-containment"), both: (2, "seed"), half: (2, "seed")}


# ---------------------------------------------------------------------------------------------
# 6. the verifier names each failing check
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def verifier(slice_data, neighbours):
    from mteb_stratified.generation.offline import OfflineVerifier
    _, art = slice_data
    return OfflineVerifier(art, neighbours, None)


def _failed(verdict) -> set:
    return {c["check"] for c in verdict["checks"] if c.get("required", True)
            and not c["passed"]}


def _title_doc(data, art):
    """A document whose title would pass every check but the title copy."""
    from mteb_stratified.generation.offline import OfflineVerifier
    for d in sorted(data.corpus):
        title = data.corpus[d]["title"].strip()
        words = title.lower().split()
        content = [w.strip(",?") for w in words]
        if 3 <= len(words) <= OfflineVerifier.MAX_WORDS and ". " not in title and \
                len(set(content)) == len(content) and art.extract_entities(title):
            return d, title
    raise AssertionError("no slice title fits")


@pytest.mark.parametrize("case,failing", [
    ("repeated", {"no_repeated_word"}), ("short", {"length"}), ("title", {"not_a_title"}),
    ("no_entity", {"has_entity"})])
def test_verifier_names_the_failing_check(slice_data, pair, verifier, case, failing):
    from mteb_stratified.io.corpus_text import doc_text

    data, art = slice_data
    text, _, both, _, (a, b) = pair
    doc = both
    if case == "repeated":
        query = f"{text} and {a}"
    elif case == "short":
        a1 = next(n for n in sorted(art.doc_entities[both]) if len(n.split()) == 1
                  and art.extract_entities(n) == {n})
        query = a1
    elif case == "title":
        doc, query = _title_doc(data, art)
    else:
        query = "what is known about this"
    verdict = verifier.verify(query, [(doc, doc_text(data.corpus[doc]))])
    assert verdict["well_formed"] is False
    assert _failed(verdict) - {"concepts_covered"} == failing, verdict
    assert all(c["reason"] for c in verdict["checks"])
    if case == "no_entity":
        assert verdict["answerable"] is False


def test_verifier_passes_a_good_query(slice_data, pair, verifier):
    from mteb_stratified.io.corpus_text import doc_text

    data, _ = slice_data
    text, _, both, half, _ = pair
    verdict = verifier.verify(text, [(both, doc_text(data.corpus[both]))])
    assert verdict["well_formed"] is True and verdict["answerable"] is True, verdict
    assert _failed(verdict) == set() and all(c["reason"] for c in verdict["checks"])
    retrievable = [c for c in verdict["checks"] if c["check"] == "retrievable"]
    assert retrievable and retrievable[0]["required"] is False


class _Offline:
    """The three offline parts of the slice, for the conformance kit."""

    @pytest.fixture(autouse=True)
    def _parts(self, slice_data, neighbours):
        from mteb_stratified.generation.offline import (OfflineJudge, OfflineQueryWriter,
                                                        OfflineVerifier)
        _, art = slice_data
        self.parts = {"writer": OfflineQueryWriter(art, neighbours),
                      "judge": OfflineJudge(art),
                      "verifier": OfflineVerifier(art, neighbours, None)}


class TestOfflineWriterConforms(_Offline, QueryWriterConformance):
    def make(self):
        return self.parts["writer"]


class TestOfflineJudgeConforms(_Offline, RelevanceJudgeConformance):
    def make(self):
        return self.parts["judge"]


class TestOfflineVerifierConforms(_Offline, VerifierConformance):
    def make(self):
        return self.parts["verifier"]


# ---------------------------------------------------------------------------------------------
# 7. the output works downstream unchanged
# ---------------------------------------------------------------------------------------------
def _bm25_results(data, folder, split: str):
    """A BM25 run's tie-aware per-query values as an MTEB result of ``split`` in ``folder``."""
    from mteb_stratified import evaluate
    from mteb_stratified.adapters.bm25 import bm25_run
    from mteb_stratified.adapters.mteb.scoring import write_per_query

    run, _ = bm25_run(data.corpus, {q: data.queries[q] for q in data.qrels}, depth=100)
    res = evaluate(data.qrels, run, ["nDCG@10"], missing="zero")
    write_per_query(res, folder / "StratifiedNFCorpus_per_query.csv", hf_subset="default",
                    hf_split=split)
    mean = float(res["nDCG@10"].expected)
    path = folder / "StratifiedNFCorpus.json"
    path.write_text(json.dumps({"task_name": "StratifiedNFCorpus", "dataset_revision": "x",
                                "mteb_version": "2", "scores": {split: [
                                    {"ndcg_at_10": mean, "ndcg_at_10_expected": mean,
                                     "main_score": mean, "hf_subset": "default"}]}}))
    return path, res


def _stratify(path, structure, dataset, split, out, capsys) -> dict:
    code = cli_main.main(["stratify", str(path), "--structure", structure, "--dataset", dataset,
                          "--split", split, "--resamples", "20", "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    return json.loads((out / "StratifiedNFCorpus.json").read_text())["strata"][split]


def test_output_stratifies_apart_and_loads_as_an_mteb_task(written, slice_paths, slice_data,
                                                           tmp_path, capsys):
    """``stratify`` on the output: the test split is the original queries alone; merged with
    --merge-into-split, the generated queries are set apart and the estimates do not move; the
    generated split stratifies on its own, marked as generated."""
    from mteb_stratified.io import load_beir

    folder, structure = slice_paths
    out = written["out"]
    original = load_beir(out, "test")
    assert original.qrels == load_beir(folder, "test").qrels
    path, _ = _bm25_results(original, tmp_path / "bm25", "test")
    block = _stratify(path, structure, out, "test", tmp_path / "strat", capsys)
    before = written["coverage"]["before"]
    assert block["n_queries"] == before["n_queries"] and block["generated"] is None
    assert block["coverage"]["cluster"]["msc"] == pytest.approx(before["cluster"]["msc"])
    assert block["origin"] == "original"
    # merged: a BM25 run over the original and generated queries of the merged split
    merged = tmp_path / "merged"
    assert _generate(slice_paths, merged, "--seed", "0", "--merge-into-split", "test") == 0
    assert "--merge-into-split test: qrels/test.tsv now holds" in capsys.readouterr().err
    both = load_beir(merged, "test")
    gen_ids = {r["_id"] for r in written["gen"]}
    assert set(both.generated()) == gen_ids and set(both.qrels) == set(original.qrels) | gen_ids
    mpath, res = _bm25_results(both, tmp_path / "bm25m", "test")
    mblock = _stratify(mpath, structure, str(merged), "test", tmp_path / "stratm", capsys)
    assert "reported apart" in capsys.readouterr().out
    # no generated qrel reaches the original queries' estimates
    assert mblock["n_queries"] == block["n_queries"]
    assert mblock["estimates"] == block["estimates"]
    apart = {e["qid"] for e in mblock["excluded"] if "reported apart" in e["reason"]}
    assert apart == gen_ids
    g = mblock["generated"]
    per_query = res["nDCG@10"].per_query()
    assert g["generated"]["n_queries"] == len(gen_ids)
    assert g["generated"]["estimate"] == pytest.approx(np.mean([per_query[q] for q in gen_ids]))
    assert g["original"]["estimate"] == pytest.approx(
        block["estimates"]["expected"]["analytic"]["pooled"]["estimate"])
    # the generated split on its own: stratified as it is, and marked
    only = load_beir(out, "generated")
    gpath, _ = _bm25_results(only, tmp_path / "bm25g", "generated")
    gblock = _stratify(gpath, structure, out, "generated", tmp_path / "stratg", capsys)
    assert gblock["origin"] == "generated" and gblock["n_queries"] == len(gen_ids)
    verdict = written["coverage"]["gate"]["verdict"]
    assert gblock["gate_verdict"] == verdict   # the generator's gate, labelled where it is read
    assert any(w.startswith("every query of this split is generated") and verdict in w
               for w in gblock["warnings"])
    # …and the generated queries load as a split of a tie-aware MTEB task
    pytest.importorskip("mteb")
    from mteb_stratified.adapters.mteb.tasks import beir_task
    task = beir_task(out, name="StratifiedSliceGenerated", split="generated")
    task.load_data()
    split = task.dataset["default"]["generated"]
    assert set(split["queries"]["id"]) == set(split["relevant_docs"]) == gen_ids
    assert len(split["corpus"]) == len(original.corpus)


# ---------------------------------------------------------------------------------------------
# 8. a target above the corpus' ceiling
# ---------------------------------------------------------------------------------------------
def test_a_weightless_cluster_is_left_out_of_msc_and_its_ceiling(tmp_path):
    """A map where one of the 31 clusters is no document's own stratum (the bundled NFCorpus
    map with that cluster's documents moved to cluster 0): MSC counts the 30 clusters that
    carry weight, so the single-document ceiling is 1 (it was 30/31 = 0.968 over all
    clusters), and the weightless cluster is listed apart, never a gap."""
    import gzip
    import hashlib
    import shutil

    from mteb_stratified.core import cluster_coverage
    from mteb_stratified.io import load_corpus
    from mteb_stratified.stratification import cluster_weights
    from mteb_stratified.stratification.validity import coverage_ceiling
    from mteb_stratified.structure.artifact import StructureArtifact

    src = StructureArtifact.bundled("nfcorpus")
    art = tmp_path / "art"
    shutil.copytree(os.path.join(bundled_path("nfcorpus"), "structure"), art)
    last = src.n_clusters - 1
    path = art / "doc_clusters.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    for r in rows:
        if str(last) in r["weights"]:
            r["weights"] = {"0": 1.0}
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in rows))
    meta = json.loads((art / "metadata.json").read_text(encoding="utf-8"))
    data = path.read_bytes()  # the completion record names the table as it is now (#46)
    meta["files"]["doc_clusters.jsonl.gz"] = {"bytes": len(data),
                                              "sha256": hashlib.sha256(data).hexdigest()}
    (art / "metadata.json").write_text(json.dumps(meta), encoding="utf-8")
    weights = cluster_weights(StructureArtifact.load(str(art)),
                              load_corpus(bundled_path("nfcorpus")))
    mass = weights.primary_share()
    assert mass[last] == 0 and np.count_nonzero(mass) == src.n_clusters - 1
    assert coverage_ceiling(weights, mass)[0] == 1.0
    own = weights.primary()
    cov = cluster_coverage(own[own >= 0], mass)
    assert cov.msc == 1.0 and cov.weightless == 1 and cov.weighted_units == src.n_clusters - 1
    assert last not in [g.stratum for g in cov.gaps]


# ---------------------------------------------------------------------------------------------
# progress: the candidates drafted and accepted, and every step that can take long
# ---------------------------------------------------------------------------------------------
def test_candidate_bar_counts_what_the_loop_merges(capsys):
    from mteb_stratified.generation import Candidate, CandidateBar
    with CandidateBar(5) as bar:
        for status in ("accepted", "rejected", "accepted"):
            bar(Candidate(status=status))
        assert (bar.bar.n, bar.accepted) == (3, 2)
    err = capsys.readouterr().err
    assert "generate: candidates" in err and "3/5" in err and "accepted 2" in err
    with CandidateBar(None, enabled=False) as off:   # --no-progress: nothing at all
        off(Candidate(status="accepted"))
    assert not off.enabled and capsys.readouterr().err == ""


def test_an_offline_run_shows_its_progress(slice_paths, tmp_path, capfd):
    """Without --no-progress: a bar for the candidates (drafted and accepted) and the gate's
    corpus embedding (the names' bar shows only when they are embedded by the model: the
    slice's structure looks them up); with nothing added, the gate embeds nothing."""
    folder, structure = slice_paths
    base = ["generate", "--dataset", folder, "--structure", structure, "--writer", "template",
            "--json", "--seed", "3"]
    assert cli_main.main([*base, "--out", str(tmp_path / "one"), "--max-candidates", "1"]) == 0
    err = capfd.readouterr().err
    for step in ("generate: candidates", "1/1",
                 "embed the corpus"):
        assert step in err, (step, err[-2000:])
    assert re.search(r"accepted [01]\b", err), err[-2000:]
    cov = json.load(open(tmp_path / "one" / "coverage.json", encoding="utf-8"))
    assert cov["gate"]["panel"] == ["BM25", "MiniLM"]


def test_a_gate_with_nothing_to_gate_embeds_nothing(slice_data, tmp_path, capfd):
    """Targets met at the start (no query added): the gate has no order to compare, so it
    runs no dense model over the corpus (that took minutes on NFCorpus for nothing)."""
    from mteb_stratified.adapters.bm25 import bm25_run
    from mteb_stratified.generation.gate import run_gate
    from mteb_stratified.generation.result import GenerationResult
    data, _ = slice_data
    gate = run_gate(data, GenerationResult(), judge=None, note="test", bm25_run=bm25_run,
                    cache_dir=str(tmp_path / ".work"), show_progress=True)
    assert gate["verdict"] == "nothing added: nothing to gate"
    assert gate["panel"] == ["BM25"] and gate["judge"] == {"measured": False, "why": "test"}
    assert "embed the corpus" not in capfd.readouterr().err
    assert not (tmp_path / ".work").exists()
