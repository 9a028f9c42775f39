"""The cluster tree of a structure: Ward's linkage against scipy's, levels, the artifact table."""

import numpy as np
import pytest

from mteb_stratified.core import InputError
from mteb_stratified.core.stats.hierarchy import level_sizes
from mteb_stratified.structure.hierarchy import (cluster_centroids, cluster_tree,
                                                 tree_from_merges, ward_merges)


def _same_partition(a, b) -> bool:
    pairs = {}
    for x, y in zip(a.tolist(), b.tolist()):
        if pairs.setdefault(x, y) != y:
            return False
    return len(set(pairs.values())) == len(pairs)


@pytest.mark.parametrize("C", [2, 3, 7, 40, 150])
def test_unit_weights_give_scipys_ward_tree(C):
    """With every cluster of size 1, weighted Ward is scipy's Ward: the same merge costs
    (scipy reports √(2Δ)) and the same partition at every level."""
    from scipy.cluster.hierarchy import cut_tree, linkage

    rng = np.random.default_rng(C)
    X = rng.normal(size=(C, 6))
    Z = linkage(X, "ward")
    merges = ward_merges(X, np.ones(C))
    assert np.sort(np.sqrt(2 * merges[:, 2])) == pytest.approx(np.sort(Z[:, 2]))
    tree = tree_from_merges(merges, C)
    for level, k in enumerate(level_sizes(C)):
        assert tree.n_units(level) == k
        assert _same_partition(tree.ancestors(level), cut_tree(Z, n_clusters=k).ravel())


def test_sizes_weigh_the_merges():
    """Weighted Ward is the Ward of the members: two clusters of 50 merge after the nearer
    clusters of 1 would not — the costs are those of the expanded points."""
    from scipy.cluster.hierarchy import linkage

    rng = np.random.default_rng(1)
    centres = rng.normal(size=(4, 3))
    sizes = np.array([5, 1, 3, 2])
    pts = np.repeat(centres, sizes, axis=0)
    Z = linkage(pts, "ward")
    ours = ward_merges(centres, sizes)
    # the last merges of the expanded points (after the zero-cost ones) are ours
    assert np.sqrt(2 * ours[:, 2]) == pytest.approx(np.sort(Z[:, 2])[-3:])


def test_centroids_and_a_tree_from_labels():
    emb = np.eye(4)[[0, 0, 1, 2, 3, 3]].astype(np.float32)
    labels = np.array([0, 0, 1, 2, -1, 2])
    cent, sizes = cluster_centroids(labels, emb, 3)
    assert sizes.tolist() == [2, 1, 2]
    assert np.linalg.norm(cent, axis=1) == pytest.approx([1, 1, 1])
    tree = cluster_tree(labels, emb, 3)
    assert tree.n_clusters == 3 and tree.n_units(tree.n_levels - 1) == 1


def test_centroids_in_blocks_are_the_float64_sums_of_one_pass(monkeypatch):
    """cluster_centroids adds float64 rows a block at a time (no float64 copy of every
    embedding): bit for bit the sums of one add.at over all rows, whatever the block size."""
    from mteb_stratified.structure import hierarchy

    rng = np.random.default_rng(5)
    emb = rng.standard_normal((5000, 8)).astype(np.float32)
    labels = rng.integers(-1, 7, 5000)
    keep = labels >= 0
    sums = np.zeros((7, 8))
    np.add.at(sums, labels[keep], emb[keep].astype(np.float64))
    want = sums / np.linalg.norm(sums, axis=1, keepdims=True)
    for block in (1, 999, 5000, 65_536):
        monkeypatch.setattr(hierarchy, "CENTROID_BLOCK", block)
        cent, sizes = cluster_centroids(labels, emb, 7)
        assert np.array_equal(cent, want), block
        assert sizes.tolist() == np.bincount(labels[keep], minlength=7).tolist()
    with pytest.raises(ValueError, match="one row per label"):
        cluster_centroids(labels[:-1], emb, 7)


def test_the_artifact_reads_its_tree_and_refuses_a_broken_one(tmp_path):
    import gzip
    import json
    import os

    from mteb_stratified.structure.artifact import ARTIFACT_FORMAT, StructureArtifact

    meta = {"format": ARTIFACT_FORMAT, "corpus": {"fingerprint": "sha256:x", "n_docs": 3},
            "extractor": {"kind": "offline"}, "parameters": {}}
    clusters = [{"id": c, "label": f"l{c}", "mass": 1 / 3, "terms": [f"l{c}"]} for c in range(3)]
    levels = [{"level": 1, "id": 0, "children": [0, 1], "clusters": [0, 1], "label": "a",
               "mass": 2 / 3, "terms": ["a"]},
              {"level": 1, "id": 1, "children": [2], "clusters": [2], "label": "b",
               "mass": 1 / 3, "terms": ["b"]},
              {"level": 2, "id": 0, "children": [0, 1], "clusters": [0, 1, 2], "label": "c",
               "mass": 1.0, "terms": ["c"]}]
    art = StructureArtifact(meta, [], {"d": []}, clusters, {"d": {"0": 1.0}}, levels)
    folder = art.save(str(tmp_path / "a"))
    back = StructureArtifact.load(folder)
    assert back.cluster_tree.ancestors(1).tolist() == [0, 0, 1]
    assert back.unit_label(1, 1) == "b" and back.unit_mass(2, 0) == pytest.approx(1.0)
    path = os.path.join(folder, "cluster_levels.jsonl.gz")
    broken = levels[:2] + [dict(levels[2], children=[0])]   # unit 1 of level 1 orphaned
    with gzip.open(path, "wt") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in broken))
    with pytest.raises(InputError, match="no parent") as err:
        StructureArtifact.load(folder)
    assert "cluster_levels.jsonl.gz" in str(err.value) and "rebuild" in str(err.value)
    os.remove(path)
    with pytest.raises(InputError, match="structure table missing"):
        StructureArtifact.load(folder)


def test_an_artifact_without_the_tree_says_how_to_rebuild(tmp_path):
    import json

    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "metadata.json").write_text(json.dumps(
        {"format": "mteb-stratified/structure/2", "corpus": {"fingerprint": "x", "n_docs": 1}}))
    from mteb_stratified.structure.artifact import StructureArtifact

    with pytest.raises(InputError) as err:
        StructureArtifact.load(str(folder))
    text = str(err.value)
    assert "older format" in text and "cluster tree" in text
    assert "mteb-stratified structure --corpus" in text
