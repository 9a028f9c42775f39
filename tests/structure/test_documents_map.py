"""The document map (``structure --clusters documents``, the default): its definitions on a
small NFCorpus subset."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest


@pytest.fixture(scope="module")
def doc_built(tmp_path_factory, small_corpus, small_config):
    pytest.importorskip("spacy")
    pytest.importorskip("sentence_transformers")
    from mteb_stratified.structure.pipeline import build_structure

    cfg = dataclasses.replace(small_config, clusters="documents")
    out = str(tmp_path_factory.mktemp("docmap") / "art")
    return out, build_structure(small_corpus, cfg, out=out), cfg


def test_the_document_map_is_the_default():
    from mteb_stratified.structure.pipeline import StructureConfig

    assert StructureConfig().clusters == "documents"


def test_every_document_is_in_one_cluster(doc_built, small_corpus):
    _, art, _ = doc_built
    assert art.metadata["clusters"] == "documents"
    assert set(art.doc_cluster_weights) == set(small_corpus)
    assert all(list(w.values()) == [1.0] for w in art.doc_cluster_weights.values())
    share = np.bincount([next(iter(w)) for w in art.doc_cluster_weights.values()],
                        minlength=art.n_clusters) / len(small_corpus)
    assert [art.cluster_mass[c] for c in range(art.n_clusters)] == pytest.approx(share)


def test_an_entity_belongs_to_the_cluster_of_most_of_its_documents(doc_built):
    _, art, _ = doc_built
    doc_cluster = {d: next(iter(w)) for d, w in art.doc_cluster_weights.items()}
    checked = 0
    for row in art.entities:
        counts = np.bincount([doc_cluster[d] for d, ents in art.doc_entities.items()
                              if row["name"] in ents], minlength=art.n_clusters)
        if counts.sum():
            assert counts[row["cluster"]] == counts.max()
            checked += 1
    assert checked > 50


def test_the_tree_the_quality_and_a_second_seed(doc_built):
    out, art, _ = doc_built
    tree = art.cluster_tree
    assert tree.n_clusters == art.n_clusters and tree.n_units(tree.n_levels - 1) == 1
    q = art.metadata["quality"]
    assert 0 <= q["grab_bag_mass_share"] <= 1 and -1 <= q["npmi_weighted"] <= 1
    # split halves of the consensus runs already made: no second build (clustering.py)
    assert -1 <= q["seed_ari"] <= 1 and q["seed_ari_method"] == "split-half"
    assert q["runs"] == [5, 5] and "seeds" not in q
    assert set(q["levels"]) == {str(lvl) for lvl in range(0, tree.n_levels)}  # 0: leaves
    assert q["levels"]["0"]["npmi_weighted"] == q["npmi_weighted"]


def test_a_corpus_too_small_to_split_says_so_and_its_topics_are_the_leaves(doc_built):
    _, art, cfg = doc_built
    leaves = art.metadata["leaves"]
    assert leaves["leaves"] == leaves["topics"] == art.n_clusters   # 61 documents, 3 topics
    assert f"2 x {cfg.leaf_min_size} documents" in leaves["note"]
    # every cluster and unit has its terms, a label made from them and central titles
    for row in list(art.clusters) + list(art.cluster_levels):
        assert len(row["terms"]) == 10 and row["label"].split(" / ")[0] == row["terms"][0]
        assert 1 <= len(row["titles"]) <= 3 and all(row["titles"])


def test_a_second_build_still_has_the_embeddings_the_split_halves_drop_them(
        small_corpus, small_config, monkeypatch, tmp_path):
    """The pipeline does not hold the document embeddings while Leiden runs: it reads them
    back from the work folder's cache (the engine embeds the documents once), and drops them
    after the tree unless the quality step reads them again (seed_ari="second-build")."""
    from mteb_stratified.structure import describe as describe_module
    from mteb_stratified.structure.engine import LocalEngine
    from mteb_stratified.structure.pipeline import build_structure

    seen = {}
    original = describe_module.describe

    def spy(texts, rows, vocab, linked, clusters, cfg, tree, docs, titles):
        seen[cfg.seed_ari] = docs.embeddings is not None
        return original(texts, rows, vocab, linked, clusters, cfg, tree, docs, titles)

    from mteb_stratified.io.corpus_text import doc_text
    doc_texts = [doc_text(small_corpus[d]) for d in sorted(small_corpus)]

    class Counting(LocalEngine):
        documents = 0

        def embed(self, inputs, model, batch_size, **kwargs):
            Counting.documents += list(inputs) == doc_texts
            return super().embed(inputs, model, batch_size, **kwargs)

    monkeypatch.setattr(describe_module, "describe", spy)
    for method in ("split-half", "second-build"):
        cfg = dataclasses.replace(small_config, clusters="documents", seed_ari=method)
        # one work folder: the second build reuses the extraction and the embeddings
        q = build_structure(small_corpus, cfg, out=str(tmp_path / "art"), keep_work=True,
                            engine=Counting()).metadata["quality"]
        assert q["seed_ari_method"] == method and -1 <= q["seed_ari"] <= 1
        assert Counting.documents == 1  # read back (and then reused), never embedded again
    assert seen == {"second-build": True, "split-half": False}


def test_embeddings_that_cannot_be_read_back_are_a_clear_error(tmp_path):
    """Never embedded again after Leiden (a second embedding could differ from the one the
    graph was built from): a vanished or foreign cache file is an InputError naming it."""
    from mteb_stratified.core.errors import InputError
    from mteb_stratified.structure.documents import read_back

    path = str(tmp_path / "doc-embeddings-x.npy")
    with pytest.raises(InputError, match="cannot be read back") as err:
        read_back(path, 3)
    assert path in str(err.value) and "run the command again" in err.value.fix
    np.save(path, np.zeros((2, 4), dtype=np.float32))
    with pytest.raises(InputError, match="not 3 rows"):
        read_back(path, 3)
    np.save(path, np.ones((3, 4), dtype=np.float32))
    assert read_back(path, 3).tolist() == np.ones((3, 4)).tolist()


def test_the_same_seed_gives_the_same_clusters(small_corpus, small_config):
    """Deterministic: the same embeddings and seed give the same clusters (the whole build's
    byte identity is tests/structure/test_pipeline.py's, on the entity map)."""
    from mteb_stratified.io.corpus_text import doc_text
    from mteb_stratified.structure.documents import cluster_documents, embed_documents
    from mteb_stratified.structure.engine import LocalEngine

    texts = {d: doc_text(small_corpus[d]) for d in sorted(small_corpus)}
    cfg = dataclasses.replace(small_config, clusters="documents")
    emb = embed_documents(texts, cfg, None, LocalEngine())
    a = cluster_documents(texts, cfg, emb)
    b = cluster_documents(texts, cfg, emb)
    assert a.labels.tolist() == b.labels.tolist() and a.n_clusters == b.n_clusters
    assert (a.labels >= 0).all()
    # given a function (the pipeline's: nothing held during Leiden), it is called for the
    # k-NN graph and after Leiden, and the clusters are the same
    calls = []
    c = cluster_documents(texts, cfg, lambda: calls.append(1) or emb.copy())
    assert len(calls) == 2 and c.labels.tolist() == a.labels.tolist()
    assert np.array_equal(c.embeddings, emb)


@pytest.mark.parametrize("method", ["int8", "bf16"])
def test_an_int8_or_bf16_document_map_records_how_it_embedded(tmp_path, small_corpus,
                                                              small_config, method):
    """``document_embedding="int8"`` or ``"bf16"``: the artifact says so (its parameters and
    the method's record, which the schema reads back), and only that method's record."""
    from mteb_stratified.structure import StructureArtifact
    from mteb_stratified.structure.pipeline import build_structure

    cfg = dataclasses.replace(small_config, clusters="documents", document_embedding=method)
    out = str(tmp_path / method)
    build_structure(small_corpus, cfg, out=out)
    meta = StructureArtifact.load(out).metadata
    assert meta["parameters"]["document_embedding"] == method
    rec = meta[f"{method}_embedding"]
    assert f"{'bf16' if method == 'int8' else 'int8'}_embedding" not in meta
    assert rec["documents"] is True
    if method == "int8":
        assert rec["batch_size"] == 16
        assert rec["quantized_engine"] in ("x86", "fbgemm", "onednn", "qnnpack")
    else:
        from mteb_stratified.structure.sentence_model import cpu_bf16_native
        assert rec["batch_size"] == 64 and rec["cpu_bf16_native"] is cpu_bf16_native()
    # the entity map embeds no document: no record of how documents would have been embedded
    from mteb_stratified.structure.describe import bf16_embedding_record, int8_embedding_record
    entities = dataclasses.replace(cfg, clusters="entities")
    assert bf16_embedding_record(entities) == {} == int8_embedding_record(entities)
