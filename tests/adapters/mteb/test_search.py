"""Exact search at the depth boundary: whole tie groups are kept."""

from __future__ import annotations

import numpy as np

from mteb_stratified.adapters.mteb.search import keep_top_k_with_ties


def test_keep_top_k_with_ties_keeps_whole_boundary_group():
    s = np.array([0.9, 0.5, 0.5, 0.5, 0.1, 0.7])
    idx = keep_top_k_with_ties(s, 3)
    assert sorted(idx.tolist()) == [0, 1, 2, 3, 5]
    assert s[idx].tolist() == sorted(s[idx].tolist(), reverse=True)


def test_keep_top_k_without_ties_is_plain_top_k():
    s = np.arange(10, dtype=float)
    assert keep_top_k_with_ties(s, 4).tolist() == [9, 8, 7, 6]


def test_keep_top_k_ignores_nan_and_short_rows():
    s = np.array([np.nan, 0.2, 0.3])
    assert keep_top_k_with_ties(s, 5).tolist() == [2, 1]


def test_exact_search_matches_brute_force_across_chunks(tiny_beir, bow_encoder):
    """Chunked exact search == brute force top-k-with-ties, whatever the chunk size."""
    import mteb
    from mteb_stratified.adapters.mteb import beir_task
    from mteb_stratified.adapters.mteb.search import ExactTieSearch

    task = beir_task(tiny_beir)
    task.load_data()
    split = task.dataset["default"]["test"]
    corpus, queries = split["corpus"], split["queries"]
    emb_d = bow_encoder.encode([{"text": list(corpus["text"])}])
    emb_q = bow_encoder.encode([{"text": list(queries["text"])}])
    full = emb_q @ emb_d.T
    k = 3
    for chunk in (7, 13, 1000):
        search = ExactTieSearch(bow_encoder, corpus_chunk_size=chunk)
        search.index(corpus, task_metadata=task.metadata, hf_split="test", hf_subset="default",
                     encode_kwargs={"show_progress_bar": False})
        res = search.search(queries, task_metadata=task.metadata, hf_split="test",
                            hf_subset="default", top_k=k, encode_kwargs={"show_progress_bar": False})
        for qi, qid in enumerate(queries["id"]):
            kth = np.sort(full[qi])[::-1][k - 1]
            expected = {corpus["id"][j] for j in np.flatnonzero(full[qi] >= kth)}
            assert set(res[qid]) == expected, (chunk, qid)
    assert search.last_depth_extended > 0  # the toy corpus has boundary ties


def test_stock_mteb_search_cuts_the_tie_group(tiny_beir, bow_encoder):
    """The motivating defect: mteb's heap keeps exactly k, dropping tied documents."""
    from mteb.models.search_wrappers import SearchEncoderWrapper
    from mteb_stratified.adapters.mteb import beir_task

    task = beir_task(tiny_beir)
    task.load_data()
    split = task.dataset["default"]["test"]
    stock = SearchEncoderWrapper(bow_encoder)
    stock.index(split["corpus"], task_metadata=task.metadata, hf_split="test",
                hf_subset="default", encode_kwargs={"show_progress_bar": False})
    res = stock.search(split["queries"], task_metadata=task.metadata, hf_split="test",
                       hf_subset="default", top_k=3, encode_kwargs={"show_progress_bar": False})
    assert all(len(v) == 3 for v in res.values())


def test_exact_rerank_keeps_ties_among_candidates(tiny_beir, bow_encoder):
    from mteb_stratified.adapters.mteb import beir_task
    from mteb_stratified.adapters.mteb.search import ExactTieSearch

    task = beir_task(tiny_beir)
    task.load_data()
    split = task.dataset["default"]["test"]
    corpus, queries = split["corpus"], split["queries"]
    ids = list(corpus["id"])
    top_ranked = {q: ids[::2] for q in queries["id"]}  # the even documents are the candidates
    search = ExactTieSearch(bow_encoder)
    search.index(corpus, task_metadata=task.metadata, hf_split="test", hf_subset="default",
                 encode_kwargs={"show_progress_bar": False})
    res = search.search(queries, task_metadata=task.metadata, hf_split="test", hf_subset="default",
                        top_k=2, top_ranked=top_ranked, encode_kwargs={"show_progress_bar": False})
    emb_d = bow_encoder.encode([{"text": list(corpus["text"])}])
    emb_q = bow_encoder.encode([{"text": list(queries["text"])}])
    cand = np.arange(0, len(ids), 2)
    for qi, qid in enumerate(queries["id"]):
        assert set(res[qid]) <= set(ids[::2])
        s = (emb_q[qi] @ emb_d[cand].T)
        kth = np.sort(s)[::-1][1]
        assert set(res[qid]) == {ids[j] for j in cand[s >= kth]}
