"""Quantized regimes on real MiniLM embeddings of NFCorpus: Hamming scores against a plain
popcount, the tie-aware expectation over Hamming ties against brute force over orders, rescoring
against its first stage, and the errors of bad settings."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mteb_stratified.adapters.precision import quantized as qz
from mteb_stratified.core.errors import InputError
from tests.core._reference import Query, RefMeasure, brute_force

from .conftest import doc_text


@pytest.fixture(scope="module")
def slice_embeddings(minilm_fp32, nfcorpus):
    """fp32 MiniLM embeddings of 8 judged queries and 200 documents (their judged ones first)."""
    qids = sorted(nfcorpus.qrels)[:8]
    judged = sorted({d for q in qids for d in nfcorpus.qrels[q] if d in nfcorpus.corpus})[:80]
    docs = judged + [d for d in sorted(nfcorpus.corpus) if d not in set(judged)][:200 - len(judged)]
    q = minilm_fp32.encode([nfcorpus.queries[x] for x in qids], convert_to_numpy=True)
    d = minilm_fp32.encode([doc_text(nfcorpus.corpus[x]) for x in docs], convert_to_numpy=True,
                           batch_size=64)
    return qids, docs, np.asarray(q, np.float32), np.asarray(d, np.float32)


def _popcount_similarity(q: np.ndarray, d: np.ndarray) -> np.ndarray:
    """dim − Hamming distance of the sign bits, one Python popcount per pair."""
    dim = q.shape[1]
    bits = lambda v: int("".join("1" if x > 0 else "0" for x in v), 2)  # noqa: E731
    qb, db = [bits(v) for v in q], [bits(v) for v in d]
    return np.array([[dim - bin(a ^ b).count("1") for b in db] for a in qb])


@pytest.mark.parametrize("dim", [384, 381])  # 381: three padding bits in the last byte
def test_hamming_scores_equal_a_plain_popcount(slice_embeddings, dim):
    _, _, q, d = slice_embeddings
    q, d = q[:, :dim], d[:60, :dim]
    got = qz.quantized_scores(q, d, "ubinary")
    assert np.array_equal(got.scores, _popcount_similarity(q, d))
    assert got.metadata["padded_bits"] == (8 - dim % 8) % 8
    assert got.bytes_per_document == math.ceil(dim / 8)
    index = qz.BinaryIndex(qz.binary_codes(d), dim)
    sim, pos = index.search(qz.binary_codes(q), 10)
    assert np.array_equal(sim, np.take_along_axis(got.scores, pos, axis=1))


def test_int8_scores_are_the_integer_dot_product_of_st_codes(slice_embeddings):
    from sentence_transformers.util.quantization import quantize_embeddings

    _, _, q, d = slice_embeddings
    got = qz.quantized_scores(q, d, "int8")
    qc = quantize_embeddings(q, precision="int8", calibration_embeddings=d).astype(np.int64)
    dc = quantize_embeddings(d, precision="int8", calibration_embeddings=d).astype(np.int64)
    assert np.array_equal(got.scores, (qc @ dc.T).astype(np.float64))
    assert got.metadata["calibration_size"] == len(d)


def _tied_candidates(scores: np.ndarray, docs: list, limit: int = 40320) -> list:
    """The best-scored documents of one query, as many as keep the number of orders of their
    tie groups (a product of factorials) at most ``limit``, cut at a group boundary."""
    order = np.argsort(-scores, kind="stable")
    values, counts = np.unique(scores[order], return_counts=True)
    keep, orders = 0, 1
    for c in counts[::-1]:  # descending score
        if orders * math.factorial(int(c)) > limit or keep + c > 14:
            break
        keep, orders = keep + int(c), orders * math.factorial(int(c))
    return [docs[i] for i in order[:keep]]


def test_expected_value_over_hamming_ties_equals_brute_force(slice_embeddings, nfcorpus):
    from mteb_stratified import evaluate

    qids, docs, q, d = slice_embeddings
    ham = qz.quantized_scores(q, d, "ubinary").scores
    measures = [RefMeasure("nDCG", 10), RefMeasure("RR", 10), RefMeasure("R", 5)]
    checked = tied = 0
    for i, qid in enumerate(qids):
        cands = _tied_candidates(ham[i], docs)
        score = {x: float(ham[i][docs.index(x)]) for x in cands}
        if len(set(score.values())) == len(cands):
            continue  # no tie among them: nothing to average
        tied += 1
        qrels = {x: g for x, g in nfcorpus.qrels[qid].items()}
        res = evaluate({qid: qrels}, {qid: score}, [m.text() for m in measures])
        exp, lo, hi = brute_force(Query(tuple(cands), tuple(score.values()), qrels), measures, 1)
        for m, e, a, b in zip(measures, exp, lo, hi):
            r = res[m.text()]
            assert (r.expected, r.min, r.max) == pytest.approx((e, a, b), abs=1e-12), m.text()
        checked += 1
    assert tied >= 5 and checked == tied  # Hamming ties are the rule, not a corner case


def _tied_pairs(values: np.ndarray) -> int:
    _, counts = np.unique(values, return_counts=True)
    return int(np.sum(counts * (counts - 1) // 2))


@pytest.mark.parametrize("docs_kind", ["binary", "int8"])
def test_a_rescored_run_has_no_more_ties_than_its_first_stage(slice_embeddings, docs_kind):
    _, _, q, d = slice_embeddings
    res = qz.quantized_scores(q, d, "ubinary", rescore_docs=docs_kind, rescore_multiplier=2,
                              depth=20)
    assert res.scores.shape == res.positions.shape == (len(q), 40)
    assert res.first_stage_depth == 40 and res.metadata["rescore_multiplier"] == 2
    first = np.take_along_axis(res.first_stage, res.positions, axis=1)
    before = [_tied_pairs(row) for row in first]
    after = [_tied_pairs(row) for row in res.scores]
    assert all(a <= b for a, b in zip(after, before)) and sum(before) > 0
    # the rescored scores are the fp32 query against the ±1 (or dequantized int8) vectors
    i, j = 0, int(res.positions[0, 0])
    if docs_kind == "binary":
        vec = np.where(d[j] > 0, 1.0, -1.0)
    else:
        ranges = qz.calibration_ranges(d)
        vec = qz.dequantize_int8(qz.int8_codes(d[j:j + 1], ranges), ranges)[0]
    assert res.scores[i, 0] == pytest.approx(float(q[i] @ vec), rel=1e-5)


def test_dequantize_matches_sentence_transformers_rescoring(slice_embeddings):
    st = pytest.importorskip("sentence_transformers.util.quantization")
    if not hasattr(st, "_dequantize_embeddings"):
        pytest.skip("this sentence-transformers has no _dequantize_embeddings to compare with")
    _, _, _, d = slice_embeddings
    ranges = qz.calibration_ranges(d)
    codes = qz.int8_codes(d, ranges)
    ref = st._dequantize_embeddings(codes.astype(int), "int8", ranges)
    assert np.allclose(qz.dequantize_int8(codes, ranges), ref, rtol=0, atol=1e-6)


def test_bad_settings_say_what_is_valid(slice_embeddings):
    _, _, q, d = slice_embeddings
    with pytest.raises(InputError, match="at least 100 calibration embeddings.*99 were given"):
        qz.quantized_scores(q, d[:99], "int8")
    for bad in (0, -1, 1.5, "2", True):
        with pytest.raises(InputError, match="integer ≥ 1"):
            qz.check_rescore_multiplier(bad)
    with pytest.raises(InputError, match="int8, ubinary"):
        qz.quantized_scores(q, d, "int4")
    with pytest.raises(InputError, match="rescore a binary first stage"):
        qz.quantized_scores(q, d, "int8", rescore_docs="binary")
    with pytest.raises(InputError, match="384 dimensions"):
        qz.quantized_scores(q, d[:, :380], "ubinary")


def test_a_redrawn_cut_keeps_everything_above_it_and_draws_the_tie_uniformly(slice_embeddings):
    _, _, q, d = slice_embeddings
    ham = qz.quantized_scores(q, d, "ubinary").first_stage.astype(np.float64)
    cut = 25
    kth = -np.sort(-ham, axis=1)[:, cut - 1:cut]
    above, tied = ham > kth, ham == kth
    assert np.any(tied.sum(axis=1) > cut - above.sum(axis=1))  # a real tie across the cut
    counts = np.zeros_like(ham)
    rng = np.random.default_rng(3)
    draws = 400
    for _ in range(draws):
        pos = qz.resample_cut(ham, cut, rng)
        assert all(len(set(p)) == cut for p in pos)
        chosen = np.zeros_like(ham, dtype=bool)
        np.put_along_axis(chosen, pos, True, axis=1)
        assert np.all(chosen[above]) and not np.any(chosen[~(above | tied)])
        counts += chosen
    share = (cut - above.sum(axis=1, keepdims=True)) / tied.sum(axis=1, keepdims=True)
    freq = counts / draws
    # each tied document is drawn with probability share: within 5 binomial sds
    sd = np.sqrt(share * (1 - share) / draws)
    assert np.all(np.abs(freq - share)[tied] <= 5 * np.broadcast_to(sd, ham.shape)[tied] + 1e-12)
    a = qz.cut_draws(q, d, ham, cut, "binary", 2, seed=11)
    b = qz.cut_draws(q, d, ham, cut, "binary", 2, seed=11)
    assert all(np.array_equal(x[0], y[0]) and np.array_equal(x[1], y[1]) for x, y in zip(a, b))


def test_non_finite_or_empty_embeddings_are_refused(slice_embeddings):
    _, _, q, d = slice_embeddings
    bad = d.copy()
    bad[7, 3] = np.nan
    for quant in ("int8", "ubinary"):
        with pytest.raises(InputError, match="1 non-finite values .* first at row 7"):
            qz.quantized_scores(q, bad, quant)
    with pytest.raises(InputError, match="non-empty"):
        qz.quantized_scores(q[:0], d, "ubinary")
    with pytest.raises(InputError, match="k ≥ 1"):
        qz.BinaryIndex(qz.binary_codes(d), 384).search(qz.binary_codes(q), 0)


def test_top_k_with_ties_widens_faiss_top_k_to_whole_tie_groups(slice_embeddings):
    from mteb_stratified.adapters.mteb.search import keep_top_k_with_ties

    _, _, q, d = slice_embeddings
    index = qz.BinaryIndex(qz.binary_codes(d), 384)
    full = index.all_scores(qz.binary_codes(q))
    widened = 0
    for k in (1, 10, 37):
        for (pos, sims), row in zip(index.top_k_with_ties(qz.binary_codes(q), k), full):
            want = keep_top_k_with_ties(row.astype(np.float64), k)
            assert sorted(pos) == sorted(want) and np.array_equal(sims, row[pos])
            widened += len(pos) > k
    assert widened > 0
