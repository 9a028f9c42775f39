"""Every numeric option of ``structure``, ``generate`` and ``stratify`` is range-checked by
argparse (exit 2 before any work), and an ``--out`` of the wrong kind fails at the start."""

from __future__ import annotations

import pytest

from mteb_stratified.cli.main import main

STRUCTURE = ["structure", "--corpus", "nfcorpus", "--out", "OUT"]
GENERATE = ["generate", "--dataset", "nfcorpus", "--structure", "bundled", "--budget", "5",
            "--out", "OUT", "--model", "m", "--api-key", "none", "--base-url",
            "http://127.0.0.1:9/v1"]
STRATIFY = ["stratify", "results.json"]

BAD = [
    (STRUCTURE, "--limit", "-5"), (STRUCTURE, "--limit", "0"), (STRUCTURE, "--k", "0"),
    (STRUCTURE, "--seed", "-1"), (STRUCTURE, "--resolution", "0"),
    (STRUCTURE, "--resolution", "nan"), (STRUCTURE, "--threshold", "1.5"),
    (STRUCTURE, "--merge-threshold", "0"), (STRUCTURE, "--min-doc-freq", "0"),
    (STRUCTURE, "--max-doc-share", "1.1"), (STRUCTURE, "--min-cluster-size", "0"),
    (STRUCTURE, "--consensus-runs", "0"), (STRUCTURE, "--concurrency", "0"),
    (STRUCTURE, "--max-tokens", "0"), (STRUCTURE, "--timeout", "0"),
    (STRUCTURE, "--max-retries", "-1"), (STRUCTURE, "--price-in", "-1"),
    (STRUCTURE, "--soft-tau", "2"), (STRUCTURE, "--cut-points", "0.5,0.75"),
    (STRUCTURE, "--cut-points", "0.75,0.5:0.25,0.5"),
    (STRUCTURE, "--cut-points", "0.5,1.5:0.2,0.5"),
    (STRUCTURE, "--cut-points", "nan,0.5:0.2,0.5"),
    (GENERATE, "--budget", "0"), (GENERATE, "--budget", "-3"), (GENERATE, "--seed", "-1"),
    (GENERATE, "--max-pool", "0"), (GENERATE, "--pool-bm25", "-3"),
    (GENERATE, "--pool-dense", "-1"), (GENERATE, "--n-min", "0"),
    (GENERATE, "--target-msc", "1.5"), (GENERATE, "--target-scc", "-0.1"),
    (GENERATE, "--max-attempts", "0"), (GENERATE, "--n-seeds", "0"),
    (GENERATE, "--max-candidates", "0"), (GENERATE, "--max-tokens-total", "0"),
    (GENERATE, "--timeout", "-1"),
    (STRATIFY, "--seed", "-2"), (STRATIFY, "--resamples", "1"), (STRATIFY, "--n-min", "0"),
    (STRATIFY, "--max-retries", "-1"), (STRATIFY, "--timeout", "inf"),
    # seeds within [0, 2**31 - 1] (leidenalg overflowed at 2**63, after the paid extraction)
    (STRUCTURE, "--seed", str(2**70)), (STRUCTURE, "--seed", str(2**31)),
    (GENERATE, "--seed", str(2**70)), (STRATIFY, "--seed", str(2**70)),
    (STRUCTURE, "--consensus-runs", "1001"),
    # issue #48: resolutions <= 0 or not numbers; Leiden iterations: a positive integer or -1
    (STRUCTURE, "--resolution", "-1"), (STRUCTURE, "--resolution", "coarse"),
    (STRUCTURE, "--resolution", "inf"), (STRUCTURE, "--document-resolution", "0"),
    (STRUCTURE, "--document-resolution", "-0.5"), (STRUCTURE, "--document-resolution", "x"),
    (STRUCTURE, "--n-iterations", "0"), (STRUCTURE, "--n-iterations", "-2"),
    (STRUCTURE, "--n-iterations", "two"), (STRUCTURE, "--consensus-iterations", "0"),
    (STRUCTURE, "--n-iterations", "-5"),
    # an empty cache folder would be the working directory
    (STRUCTURE, "--embedding-cache", ""), (GENERATE, "--embedding-cache", " "),
    # the leaves (issue #44): resolution in (0, 100], size 1..100000, numbers only
    (STRUCTURE, "--leaf-resolution", "0"), (STRUCTURE, "--leaf-resolution", "101"),
    (STRUCTURE, "--leaf-resolution", "fine"), (STRUCTURE, "--leaf-resolution", "nan"),
    (STRUCTURE, "--leaf-min-size", "0"), (STRUCTURE, "--leaf-min-size", "100001"),
    (STRUCTURE, "--leaf-min-size", "2.5"), (STRUCTURE, "--leaf-min-size", "ten"),
    # the options' one number grammar: no digit separators, no non-ASCII digits
    (STRUCTURE, "--cut-points", "0.5,0.75:0.25,1_0"),
    (STRUCTURE, "--cut-points", "0.5,0.75:0.25,\u0660.5"),
    (STRUCTURE, "--cut-points", "0.5,0.75:0.25,\u00b2"),
]


@pytest.mark.parametrize("argv,option,value", BAD, ids=lambda x: x if isinstance(x, str) else
                         x[0])
def test_a_bad_number_exits_2_before_any_work(tmp_path, capsys, argv, option, value):
    argv = [str(tmp_path / "o") if a == "OUT" else a for a in argv]
    assert main([*argv, option, value]) == 2
    err = capsys.readouterr().err
    assert f"argument {option}" in err and "must be" in err
    assert not (tmp_path / "o").exists()
    if option.startswith("--leaf-"):   # the valid range is named, whatever was wrong
        assert ("in (0, 100]" if "resolution" in option else "in [1, 100000]") in err, err


@pytest.mark.parametrize("argv", [STRUCTURE, GENERATE, ["stratify", "r.json", "-o", "OUT"]],
                         ids=["structure", "generate", "stratify"])
def test_an_out_that_is_a_file_fails_at_the_start(tmp_path, capsys, argv):
    out = tmp_path / "a-file"
    out.write_text("x")
    argv = [str(out) if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "is a file, but a folder is needed" in err and "fix:" in err


def test_the_largest_seed_builds_with_consensus_runs(tmp_path, capsys):
    """--seed 2**31 - 1 with consensus runs: every derived seed (seed·R + i, seed + 1) is one
    Leiden takes."""
    import json
    pytest.importorskip("spacy")
    out = tmp_path / "art"
    seed = 2**31 - 1
    assert main(["structure", "--corpus", "nfcorpus", "--out", str(out), "--limit", "30",
                 "--seed", str(seed), "--consensus-runs", "3", "--bins-splits", "none",
                 "--max-doc-share", "0.3", "--no-progress", "--json",
                 "--seed-ari", "second-build"]) == 0, capsys.readouterr().err
    meta = json.load(open(out / "metadata.json"))
    assert meta["parameters"]["seed"] == seed and meta["parameters"]["consensus_runs"] == 3
    assert meta["quality"]["seeds"] == [seed, seed + 1]
    assert meta["quality"]["seed_ari_method"] == "second-build"


def test_a_corpus_too_small_for_leaves_builds_with_fewer_and_says_so(tmp_path, capsys):
    """30 documents cannot be split into leaves of --leaf-min-size 10: the build succeeds with
    its topics as the leaves and says so (stdout and metadata), and no error or traceback."""
    import json
    out = tmp_path / "art"
    assert main(["structure", "--corpus", "nfcorpus", "--out", str(out), "--limit", "30",
                 "--consensus-runs", "3", "--bins-splits", "none", "--max-doc-share", "0.3",
                 "--no-progress"]) == 0
    printed = capsys.readouterr()
    leaves = json.load(open(out / "metadata.json"))["leaves"]
    assert leaves["leaves"] == leaves["topics"] >= 1
    assert f"{leaves['leaves']} leaves in {leaves['topics']} topics" in printed.out
    assert "note: 30 documents in" in printed.out and "--leaf-min-size" in printed.out
    assert "Traceback" not in printed.err
