"""The NFCorpus structure artifact bundled in the package (built by the offline pipeline)."""

from __future__ import annotations

import math
import os

import pytest

from mteb_stratified.io import bundled_path, load_beir
from mteb_stratified.structure import StructureArtifact

FOLDER = os.path.join(bundled_path("nfcorpus"), "structure")
pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(FOLDER, "metadata.json")),
                                reason="bundled structure artifact not built yet")


def test_bundled_artifact_matches_the_bundled_corpus():
    data = load_beir(bundled_path("nfcorpus"), "test")
    art = StructureArtifact.load(FOLDER, corpus=data.corpus)
    assert art.metadata["corpus"]["n_docs"] == len(data.corpus) == 3633
    assert art.metadata["extractor"]["name"] == "offline-spacy-noun-chunks"
    assert art.metadata["clusters"] == "documents"
    assert 10 <= art.n_clusters <= 500
    tree = art.cluster_tree
    assert tree.n_clusters == art.n_clusters and tree.n_units(tree.n_levels - 1) == 1
    for level in range(1, tree.n_levels):   # each level's units hold all the mass
        units = [r for r in art.cluster_levels if r["level"] == level]
        assert sum(r["mass"] for r in units) == pytest.approx(sum(art.cluster_mass.values()))
    assert art.metadata["quality"]["grab_bag_mass_share"] < 0.6
    missing = art.metadata["docs_without_clusters"]
    assert len(art.doc_cluster_weights) + missing["count"] == len(data.corpus)
    assert math.isclose(sum(art.cluster_mass.values()),
                        len(art.doc_cluster_weights) / len(data.corpus), rel_tol=1e-9)
    for weights in art.doc_cluster_weights.values():
        assert math.isclose(sum(weights.values()), 1.0, abs_tol=1e-9)
    assert set(art.cluster_labels) == set(art.cluster_mass)


def test_bundled_artifact_is_small():
    size = sum(os.path.getsize(os.path.join(FOLDER, f)) for f in os.listdir(FOLDER))
    assert size < 4 * 2**20


def test_bundled_loader():
    art = StructureArtifact.bundled("nfcorpus")
    assert art.corpus_fingerprint.startswith("sha256:")


def test_the_leaves_are_fine_readable_and_leave_gaps_that_dev_can_fill():
    """The bundled map's leaves (issue #44): about 10-100 documents each, every one named by
    its terms; at the leaves the test queries miss the default coverage target (MSC 0.9), and
    dev holds queries whose leaf no test query reaches, so `generate` has gaps to fill."""
    import numpy as np

    from mteb_stratified.core.stats.coverage import cluster_coverage
    from mteb_stratified.core.stats.strata import stratify
    from mteb_stratified.generation.config import GenerationConfig

    art = StructureArtifact.load(FOLDER)
    sizes = np.array([c["n_docs"] for c in art.clusters])
    leaves = art.metadata["leaves"]
    assert leaves["leaves"] == art.n_clusters and 50 <= art.n_clusters <= 200
    assert sizes.min() >= art.metadata["parameters"]["leaf_min_size"]
    assert np.mean((sizes >= 10) & (sizes <= 100)) >= 0.9
    assert art.cluster_tree.n_units(1) == leaves["topics"] < art.n_clusters
    for c in art.clusters:
        assert len(c["terms"]) == 10 and len(c["titles"]) == 3 and c["label"]
    weights = {d: {int(k): v for k, v in w.items()} for d, w in art.doc_cluster_weights.items()}
    primary = {}
    for split in ("test", "dev"):
        qrels = load_beir(bundled_path("nfcorpus"), split, corpus=False).qrels
        primary[split] = stratify(qrels, weights, n_clusters=art.n_clusters).primary
    mass = [art.cluster_mass[c] for c in range(art.n_clusters)]
    cov = cluster_coverage(primary["test"], mass)
    target_msc, _ = GenerationConfig().targets((1.0, 1.0))   # every leaf weighted: ceiling 1
    assert cov.msc < target_msc
    assert set(primary["dev"].tolist()) - set(primary["test"].tolist())
