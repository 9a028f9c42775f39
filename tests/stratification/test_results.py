"""stratify_results: the library side of ``stratify`` (typed outcomes, the files it writes, the
same-query-set rule, warnings told apart by kind)."""

import csv
import json
from dataclasses import FrozenInstanceError, replace

import numpy as np
import pytest

from mteb_stratified.core.errors import InputError
from mteb_stratified.stratification import (StrataWarning, StratifiedFile, StratifyResult,
                                            strata_for_dataset, stratify_results)
from mteb_stratified.stratification.results import ORIGIN, STRATA

FAST = {"n_resamples": 20, "min_queries": 10, "seed": 1}


def _results(folder, qids, seed, *, model="org/model-a"):
    """An mteb results folder (model_meta.json) with its per-query CSV beside it; returns the
    results path and the per-query values of nDCG@10."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model_meta.json").write_text(json.dumps({"name": model, "revision": "rev"}))
    values = np.random.default_rng(seed).uniform(0, 1, len(qids))
    with open(folder / "StratifiedNFCorpus_per_query.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["hf_subset", "hf_split", "qid", "measure", "expected", "min", "max",
                    "oblivious", "range", "bias"])
        w.writerows(["default", "test", q, "nDCG@10", v, v, v, v, 0.0, 0.0]
                    for q, v in zip(qids, values))
    res = {"task_name": "StratifiedNFCorpus", "dataset_revision": "x", "mteb_version": "2",
           "scores": {"test": [{"ndcg_at_10": 0.3, "main_score": 0.3, "hf_subset": "default"}]}}
    path = folder / "StratifiedNFCorpus.json"
    path.write_text(json.dumps(res))
    return str(path), dict(zip(qids, values.tolist()))


def test_in_place_the_outcome_is_typed_and_is_what_was_written(tmp_path, dataset):
    qids = sorted(dataset.qrels)
    path, _ = _results(tmp_path / "org__model-a" / "rev", qids, 1)
    seen = {"sets": [], "files": []}
    out = stratify_results([path], **FAST, on_query_sets=seen["sets"].append,
                           on_file=seen["files"].append)
    assert isinstance(out, StratifyResult) and len(out.files) == 1
    done = out.files[0]
    assert isinstance(done, StratifiedFile) and seen["files"] == [done]
    assert seen["sets"] == [out.query_sets] and not out.query_sets.mixed
    assert done.source == done.target == path and done.model == "org/model-a"
    assert done.split == "test" and done.summary.n_queries + done.summary.n_excluded == len(qids)
    with pytest.raises(FrozenInstanceError):
        done.target = "elsewhere"
    written = json.loads(open(path).read())
    assert written["strata"]["test"]["n_queries"] == done.summary.n_queries
    assert written["scores"]["test"][0]["strata_msc"] == pytest.approx(
        done.summary.cluster_coverage.msc)
    assert open(done.table, encoding="utf-8").read() == done.table_text
    assert done.table.endswith("StratifiedNFCorpus_strata_test.tsv")
    assert done.generated is None
    assert all(isinstance(w, StrataWarning) and w.kind == STRATA for w in done.warnings)


def test_a_copy_keeps_its_model_and_leaves_the_input(tmp_path, dataset):
    qids = sorted(dataset.qrels)
    run = tmp_path / "runs"
    path, _ = _results(run / "results" / "org__model-a" / "rev", qids, 2)
    before = open(path).read()
    out = stratify_results([str(run)], out=str(tmp_path / "copy"), **FAST)
    done = out.files[0]
    assert done.source == path and done.target != path
    assert done.target == str(tmp_path / "copy" / "results" / "org__model-a" / "rev"
                              / "StratifiedNFCorpus.json")
    assert "strata" in json.loads(open(done.target).read()) and open(path).read() == before
    meta = (tmp_path / "copy" / "results" / "org__model-a" / "rev" / "model_meta.json")
    assert meta.read_bytes() == (run / "results" / "org__model-a" / "rev"
                                 / "model_meta.json").read_bytes()


def test_results_of_two_query_sets_are_said_apart_or_refused(tmp_path, dataset):
    qids = sorted(dataset.qrels)
    a, _ = _results(tmp_path / "org__a" / "rev", qids, 3, model="org/a")
    b, _ = _results(tmp_path / "org__b" / "rev", qids[:30], 4, model="org/b")
    with pytest.raises(InputError) as err:
        stratify_results([a, b], **FAST, require_same_queries=True)
    assert "2 different query sets" in err.value.message and "[org/a]" in err.value.message
    assert "strata" not in json.loads(open(a).read())  # refused before anything was written
    out = stratify_results([a, b], **FAST)
    assert out.query_sets.mixed and out.query_sets.names == (("org/a",), ("org/b",))
    assert [f.model for f in out.files] == ["org/a", "org/b"]
    assert out.query_sets.groups == ((0,), (1,))  # indices into files


def test_a_generated_split_has_its_origin_warning_by_kind(tmp_path, artifact, dataset):
    """Every query generated: the one warning that says so has the kind ORIGIN (told apart
    when it is made, never by its wording); the other warnings are the strata's own."""
    qids = sorted(dataset.qrels)
    path, _ = _results(tmp_path / "org__model-a" / "rev", qids, 5)
    all_gen = replace(dataset, origins={q: "generated" for q in qids})
    context = (artifact, all_gen, strata_for_dataset(artifact, all_gen))
    done = stratify_results([path], context=context, **FAST).files[0]
    kinds = [w.kind for w in done.warnings]
    assert kinds.count(ORIGIN) == 1 and kinds[-1] == ORIGIN
    assert len(done.warnings) == len(done.summary.warnings)
    assert [w.text for w in done.warnings] == list(done.summary.warnings)
    assert done.warnings[-1].text.startswith("every query of this split is generated")


def test_generated_queries_reported_apart_are_typed(tmp_path, artifact, dataset):
    qids = sorted(dataset.qrels)
    path, values = _results(tmp_path / "org__model-a" / "rev", qids, 6)
    gen = qids[:10]
    merged = replace(dataset, origins={q: "generated" for q in gen})
    context = lambda: (artifact, merged, strata_for_dataset(artifact, merged))  # noqa: E731
    done = stratify_results([path], context=context, **FAST).files[0]
    g = done.generated
    assert g.n_queries == 10 and g.estimate == pytest.approx(np.mean([values[q] for q in gen]))
    assert g.n_original == done.summary.n_queries
    assert g.original_estimate == pytest.approx(done.summary.pooled.estimate)
    assert g.ci_low < g.estimate < g.ci_high
    assert all(w.kind == STRATA for w in done.warnings)  # an original split: no origin warning


def test_one_path_is_one_input_and_none_is_refused(tmp_path, dataset):
    """A bare path is a list of one (not its characters); an empty list is refused before the
    structure loads."""
    qids = sorted(dataset.qrels)
    path, _ = _results(tmp_path / "org__model-a" / "rev", qids, 1)
    out = stratify_results(path, **FAST)
    assert [f.source for f in out.files] == [path]

    def no_context():
        raise AssertionError("the structure must not load for no input")

    with pytest.raises(InputError, match="no results given"):
        stratify_results([], context=no_context, **FAST)


def test_unknown_query_ids_are_refused_before_any_file_is_written(tmp_path, dataset):
    """The second file holds a query the strata do not know: the first file is left as it was
    (every input is checked against the strata before the first write)."""
    qids = sorted(dataset.qrels)
    good, _ = _results(tmp_path / "org__model-a" / "rev", qids, 1)
    bad, _ = _results(tmp_path / "org__model-b" / "rev", qids + ["NOT-A-QUERY"], 2,
                      model="org/model-b")
    before = open(good).read()
    with pytest.raises(InputError):
        stratify_results([good, bad], **FAST)
    assert open(good).read() == before
