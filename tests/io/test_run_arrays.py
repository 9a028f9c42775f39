"""The streaming run reader: ``evaluate(path, ...)`` is bit-identical to ``evaluate(dicts, ...)``,
on real BEIR data (bundled NFCorpus) and on random tied runs, grouped or interleaved."""

import gzip
import re
from collections import Counter

import numpy as np
import pytest

import mteb_stratified
from mteb_stratified.core import InputError, from_dicts
from mteb_stratified.io import bundled_path, files, load_beir, read_qrels, read_run
from mteb_stratified.io.files import read_run_arrays

MEASURES = ["nDCG@10", "RR@10", "R@100", "P@10", "AP@100", "nDCG(dcg='exp-log2')@5", "AP"]
OPTIONS = [dict(), dict(missing="zero"), dict(ideal="candidates"), dict(oblivious="input"),
           dict(missing="zero", ideal="candidates", oblivious="input")]


def write_lines(path, lines, gz=False):
    data = "".join(f"{q} Q0 {d} {i} {s!r} t\n" for i, (q, d, s) in enumerate(lines)).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return str(path)


def same_result(qrels, path, **options):
    """evaluate() of the file and of its dicts agree exactly, per query and in aggregate."""
    by_file = mteb_stratified.evaluate(qrels, path, MEASURES, **options)
    by_dict = mteb_stratified.evaluate(read_qrels(qrels) if isinstance(qrels, str) else qrels,
                                       read_run(path), MEASURES, **options)
    assert by_file.to_dict(per_query=True) == by_dict.to_dict(per_query=True)
    return by_file


def same_arrays(qrels, path):
    """The streaming reader and ``from_dicts(read_run(...))`` agree: the same InputError, or
    the same arrays."""
    results = []
    for read in (lambda: read_run_arrays(path, qrels),
                 lambda: from_dicts(qrels, read_run(path), run_name=path)):
        try:
            results.append(read())
        except InputError as err:
            results.append(err)
    if any(isinstance(r, InputError) for r in results):
        a, b = results
        assert isinstance(a, InputError) and isinstance(b, InputError), results
        assert (a.message, a.line, a.source) == (b.message, b.line, b.source)
        return
    (a, left_a), (b, left_b) = results
    assert left_a == left_b and a.qids == b.qids
    for name in ("scores", "grades", "n_candidates", "qrels_grades"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    # the tie-break keys differ (per query vs global rank) but order each row the same way
    np.testing.assert_array_equal(np.argsort(a.tiebreak, axis=1), np.argsort(b.tiebreak, axis=1))


@pytest.fixture(scope="module")
def nfcorpus_run(tmp_path_factory):
    """A token-overlap run on the NFCorpus test queries: integer scores, so many ties."""
    data = load_beir(bundled_path("nfcorpus"), "test")
    index: dict = {}
    for doc, row in data.corpus.items():
        for token in set(re.findall(r"\w+", (row["title"] + " " + row["text"]).lower())):
            index.setdefault(token, []).append(doc)
    lines = []
    for qid, text in data.queries.items():
        counts = Counter(d for t in set(re.findall(r"\w+", text.lower())) for d in index.get(t, ()))
        lines += [(qid, d, float(c)) for d, c in counts.most_common(100)]
    folder = tmp_path_factory.mktemp("nf")
    return data.qrels, write_lines(folder / "run.trec", lines)


@pytest.mark.parametrize("options", OPTIONS)
def test_nfcorpus_file_equals_dicts(nfcorpus_run, options):
    qrels, path = nfcorpus_run
    res = same_result(qrels, path, **options)
    assert res["nDCG@10"].max > res["nDCG@10"].min  # the run is tied: the test can fail


def test_nfcorpus_arrays(nfcorpus_run):
    same_arrays(*nfcorpus_run)


def random_lines(seed, interleave):
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(12):
        n = int(rng.integers(1, 30))
        docs = rng.choice(60, size=n, replace=False)
        scores = rng.integers(0, 4, size=n) / 2 - (rng.random(n) < 0.1) * 0.0
        lines += [(f"q{q}", f"d{d}", float(s) if s else -0.0 if rng.random() < .5 else 0.0)
                  for d, s in zip(docs, scores)]
    if interleave:
        lines = [lines[i] for i in rng.permutation(len(lines))]
    return lines


def random_qrels(seed):
    rng = np.random.default_rng(seed + 1)
    return {f"q{q}": {f"d{d}": int(rng.integers(0, 3)) for d in rng.choice(60, 20, replace=False)}
            for q in range(3, 16)}  # q0-q2 only in the run, q12-q15 only in the qrels


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("interleave", [False, True])
def test_random_tied_runs(tmp_path, seed, interleave):
    path = write_lines(tmp_path / "run.trec", random_lines(seed, interleave), gz=seed % 2)
    qrels = random_qrels(seed)
    for options in OPTIONS:
        same_result(qrels, path, **options)
    same_arrays(qrels, path)


def test_grouped_run_is_streamed_and_interleaved_falls_back(tmp_path, monkeypatch):
    """A plain interleaved run is grouped on the fast path (#46.11: it used to take the dict
    path); an interleaved run the fast path cannot read (tabs) still falls back to it."""
    qrels = {"a": {"x": 1}, "b": {"y": 1}}
    grouped = write_lines(tmp_path / "g.trec", [("a", "x", 1.0), ("a", "y", 1.0), ("b", "y", .5)])
    mixed = write_lines(tmp_path / "m.trec", [("a", "x", 1.0), ("b", "y", .5), ("a", "y", 1.0)])
    tabbed = tmp_path / "t.trec"
    tabbed.write_text(open(mixed).read().replace(" ", "\t"))
    calls = []
    monkeypatch.setattr(files, "from_dicts", lambda *a, **k: calls.append(1) or from_dicts(*a, **k))
    read_run_arrays(grouped, qrels)
    assert calls == []
    arrays, _ = read_run_arrays(mixed, qrels)
    assert calls == [] and arrays.qids == ("a", "b") and arrays.n_candidates.tolist() == [2, 1]
    arrays, _ = read_run_arrays(str(tabbed), qrels)
    assert calls == [1] and arrays.qids == ("a", "b") and arrays.n_candidates.tolist() == [2, 1]


@pytest.mark.parametrize("lines, line, first", [
    ("q Q0 a 1 1 t\nq Q0 b 2 1 t\nq Q0 a 3 1 t\n", 3, 1),
    ("q Q0 a 1 1 t\nr Q0 b 2 1 t\nq Q0 a 3 1 t\n", 3, 1),  # interleaved: the dict path says it
])
def test_duplicate_lines_name_both(tmp_path, lines, line, first):
    path = tmp_path / "run.trec"
    path.write_text(lines)
    with pytest.raises(InputError, match=f"listed twice .*first on line {first}") as err:
        read_run_arrays(str(path), {"q": {"a": 1}})
    assert err.value.line == line and err.value.source == str(path)


def test_json_run_path(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{"q": {"a": 0.5, "b": 0.5}}')
    assert mteb_stratified.evaluate({"q": {"a": 1}}, str(path), ["RR@10"])["RR@10"].expected == 0.75


def test_equal_widths_need_no_copy(tmp_path):
    path = write_lines(tmp_path / "r.trec", [(f"q{q}", f"d{d}", float(d % 3))
                                             for q in range(5) for d in range(7)])
    arrays, _ = read_run_arrays(path, {f"q{q}": {"d1": 1} for q in range(5)})
    assert arrays.scores.shape == (5, 7) and arrays.scores.base is not None  # a view
