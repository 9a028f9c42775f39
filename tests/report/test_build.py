"""report.build: the report as a frozen Report, written through the renderers, and the
same-query-set rule applied as in stratify and the leaderboard."""

import csv
from dataclasses import FrozenInstanceError

import numpy as np
import pytest

from mteb_stratified.core.errors import InputError
from mteb_stratified.report import Report, build
from mteb_stratified.report.render import report_pair_problem, to_markdown

FAST = {"n_resamples": 20, "min_queries": 10, "seed": 1}


def _csv(path, qids, seed):
    values = np.random.default_rng(seed).uniform(0, 1, len(qids))
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["hf_subset", "hf_split", "qid", "measure", "expected", "min", "max",
                    "oblivious", "range", "bias"])
        w.writerows(["default", "test", q, "nDCG@10", v, v, v, v, 0.0, 0.0]
                    for q, v in zip(qids, values))
    return str(path)


def test_build_returns_a_frozen_report_that_writes_its_pair(tmp_path, dataset):
    qids = sorted(dataset.qrels)
    a, b = _csv(tmp_path / "a.csv", qids, 1), _csv(tmp_path / "b.csv", qids, 2)
    steps = []

    def step(label):
        steps.append(label)
        from contextlib import nullcontext
        return nullcontext()

    report = build([a, f"B={b}"], title="T", steps=step, **FAST)
    assert isinstance(report, Report) and list(report.summaries) == ["a", "B"]
    assert report.title == "T" and not report.query_sets.mixed
    assert report.query_sets.names == (("a", "B"),)
    assert report.bundle.pairs.pairs and report.bundle.stability is not None
    with pytest.raises(FrozenInstanceError):
        report.bundle = {}
    assert steps[0].startswith("loading the structure") and len(steps) == 5
    html, md = tmp_path / "out" / "r.html", tmp_path / "out" / "r.md"
    assert report.write(html, md) == (str(html), str(md))
    assert report_pair_problem(html, md) is None
    assert md.read_text().startswith(to_markdown(report.bundle).rstrip("\n"))


def test_systems_of_two_query_sets_are_paired_within_a_set_or_refused(tmp_path, dataset):
    qids = sorted(dataset.qrels)
    a, b = _csv(tmp_path / "a.csv", qids, 1), _csv(tmp_path / "b.csv", qids, 2)
    c = _csv(tmp_path / "c.csv", qids[:30], 3)
    with pytest.raises(InputError) as err:
        build([c, a, b], require_same_queries=True, **FAST)
    assert err.value.message.startswith("the results were evaluated on 2 different query "
                                        "sets, so they cannot be compared: ")
    assert "[a, b]" in err.value.message and "[c]" in err.value.message
    report = build([c, a, b], **FAST)
    assert report.query_sets.mixed and report.query_sets.names == (("a", "b"), ("c",))
    assert list(report.summaries) == ["a", "b", "c"]  # the largest query set first
    pairs = report.bundle.pairs.pairs
    assert pairs and all("c" not in (p.a, p.b) for p in pairs)
    assert report.bundle.pairs.note is None and report.bundle.pairs.grain is None
    (label, stability), = report.bundle.stability  # one query set of ≥ 2 systems
    assert stability.systems == ("a", "b") and label


def test_an_unknown_input_fails_before_the_structure_loads(tmp_path):
    def context():
        raise AssertionError("the structure was loaded")

    with pytest.raises(InputError, match="file or folder not found"):
        build([str(tmp_path / "missing.trec")], context=context, **FAST)
    with pytest.raises(InputError, match="two systems named"):
        build([f"x={_csv(tmp_path / 'a.csv', ['q'], 1)}", f"x={tmp_path / 'a.csv'}"],
              context=context, **FAST)
