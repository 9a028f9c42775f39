"""Crash safety of the files we write (#46): a structure artifact killed at any file operation of
its save, the temp files a killed writer leaves, and the report's HTML/Markdown pair.

Each kill is a real SIGKILL of a child process that counts its own file operations
(``os.replace``, ``os.rename``, ``os.unlink``, ``os.remove``) through a wrapper installed in the
child only, and kills itself just before or just after the k-th, for every k.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from mteb_stratified.core.errors import InputError
from mteb_stratified.structure.artifact import StructureArtifact

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REBUILD = "mteb-stratified structure --corpus"

#: A child that runs ``CALL`` with its file operations counted, SIGKILLing itself just before
#: ("before") or just after ("after") the k-th; it prints the count when it was not killed.
CHILD = r"""
import os, signal, sys
sys.path.insert(0, sys.argv[1])
mode, k = sys.argv[2], int(sys.argv[3])
args = sys.argv[4:]
SETUP
count = [0]

def counted(fn):
    def op(*a, **kw):
        if not COUNTS(a):
            return fn(*a, **kw)
        count[0] += 1
        if mode == "before" and count[0] == k:
            os.kill(os.getpid(), signal.SIGKILL)
        out = fn(*a, **kw)
        if mode == "after" and count[0] == k:
            os.kill(os.getpid(), signal.SIGKILL)
        return out
    return op

for name in ("replace", "rename", "unlink", "remove"):
    setattr(os, name, counted(getattr(os, name)))
CALL
print(count[0])
"""


def _child(setup: str, call: str, counts: str = "lambda a: True") -> str:
    return (CHILD.replace("SETUP", setup).replace("CALL", call)
            .replace("COUNTS", f"({counts})"))


def _kill_each(code: str, args: list, reset, check, modes=("before", "after")) -> dict:
    """Run ``code`` once per kill point: ``reset()`` before each run, ``check(mode, k)`` after
    each kill; returns ``{mode: number of counted operations of a run not killed}``.  (A kill
    just before the k-th operation leaves the files a kill just after the one before it
    leaves, and the temp file the k-th would have renamed.)"""
    total = {}
    for mode in modes:
        for k in range(1, 100):
            reset()
            done = subprocess.run([sys.executable, "-c", code, ROOT, mode, str(k), *args],
                                  capture_output=True, text=True, timeout=300)
            if done.returncode == 0:
                total[mode] = int(done.stdout.split()[-1])
                assert k > total[mode]
                break
            assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
            check(mode, k)
    return total


def _files(folder) -> dict:
    """The artifact files of ``folder`` (temp and hidden files left out), name -> bytes."""
    out = {}
    for name in sorted(os.listdir(folder)):
        if not name.startswith(".") and os.path.isfile(os.path.join(folder, name)):
            with open(os.path.join(folder, name), "rb") as fh:
                out[name] = fh.read()
    return out


def _temps(folder) -> list:
    return sorted(n for n in os.listdir(folder) if n.endswith(".tmp"))


def _build(kind: int) -> StructureArtifact:
    """A small real artifact: the bundled one's clusters and tree, with 40 of its documents
    and 50 of its entities, different for each ``kind``, and every table of build 2 differing
    from build 1's (its labels are marked)."""
    big = StructureArtifact.bundled()
    docs = sorted(big.doc_cluster_weights)[kind * 40:(kind + 1) * 40]
    mark = "" if kind == 1 else f" (build {kind})"
    metadata = {**big.metadata, "name": f"build {kind}"}
    return StructureArtifact(
        metadata, [dict(e) for e in big.entities[kind * 50:(kind + 1) * 50]],
        {d: sorted(big.doc_entities[d]) for d in docs},
        [{**c, "label": c["label"] + mark} for c in big.clusters],
        {d: {str(c): w for c, w in big.doc_cluster_weights[d].items()} for d in docs},
        [{**r, "label": r["label"] + mark} for r in big.cluster_levels])


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """Two different builds saved once each: ``(folder of build 1, folder of build 2)``."""
    base = tmp_path_factory.mktemp("builds")
    one, two = str(base / "one"), str(base / "two")
    _build(1).save(one)
    _build(2).save(two)
    assert all(_files(one)[n] != _files(two)[n] for n in _files(one))
    return one, two


def _outcome(folder: str, one: str, two: str) -> str:
    """"build 1", "build 2" or "refused" (a clear InputError); a mix fails the test."""
    try:
        art = StructureArtifact.load(folder)
    except InputError as exc:
        assert str(exc.source).startswith(folder) and REBUILD in exc.fix, exc
        return "refused"
    got = _files(folder)
    for name, ref in (("build 1", one), ("build 2", two)):
        if got == _files(ref):
            assert art.metadata["name"] == name
            return name
    mixed = {n: "1" if b == _files(one).get(n) else "2" if b == _files(two).get(n) else "?"
             for n, b in got.items()}
    pytest.fail(f"load() used a folder mixing two builds: {mixed}")


def test_a_kill_at_every_file_operation_of_save_leaves_old_new_or_a_refusal(tmp_path, builds):
    """#46.1: structure's save over an older artifact, SIGKILLed just before and just after
    each of its file operations in turn: load() then gives build 1, build 2 or a clear
    refusal (with the rebuild command), never a mix; a rerun of the save completes, and
    removes the temp files the killed one left."""
    one, two = builds
    target = str(tmp_path / "art")
    code = _child("from mteb_stratified.structure.artifact import StructureArtifact\n"
                  "art = StructureArtifact.load(args[1])",
                  "art.save(args[0])")
    seen: list = []

    def reset():
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(one, target)

    def check(mode, k):
        seen.append((mode, k, _outcome(target, one, two)))
        StructureArtifact.load(two).save(target)  # the rerun completes, leaving no temp file
        assert _outcome(target, one, two) == "build 2" and _temps(target) == []

    total = _kill_each(code, [target, two], reset, check)
    assert total["before"] == total["after"] >= 7  # 1 removal, 5 tables, metadata.json
    outcomes = {o for _, _, o in seen}
    assert outcomes == {"build 1", "build 2", "refused"}, seen
    # build 1 until the old metadata.json goes, build 2 only once the new one is in place
    assert seen[0] == ("before", 1, "build 1") and seen[-1] == ("after", total["after"],
                                                                 "build 2")


def test_load_refuses_the_mixed_folder_of_the_report(tmp_path, builds):
    """#46.1: the folder of the report (metadata.json and doc_clusters of build 1, the other
    tables of build 2) is refused, naming the first table of the other build."""
    one, two = builds
    mixed = str(tmp_path / "mixed")
    shutil.copytree(one, mixed)
    for name in ("entities", "doc_entities", "clusters", "cluster_levels"):
        shutil.copy(os.path.join(two, f"{name}.jsonl.gz"), mixed)
    with pytest.raises(InputError, match="mixes files of two builds") as err:
        StructureArtifact.load(mixed)
    assert err.value.source == os.path.join(mixed, "entities.jsonl.gz")
    assert REBUILD in err.value.fix and mixed in err.value.fix


def _beir(folder, corpus) -> str:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "corpus.jsonl"), "w") as fh:
        for doc_id in sorted(corpus):
            fh.write(json.dumps({"_id": doc_id, **corpus[doc_id]}) + "\n")
    return str(folder)


@pytest.mark.slow
def test_a_rerun_never_reuses_a_mixed_folder(tmp_path, small_corpus, capsys):
    """#46.1: the issue's folder (build 1's metadata.json and doc_clusters, build 2's other
    tables: a save killed at its 7th rename) made a rerun of build 1's command print
    "reused": true; now it is built again, byte for byte build 1."""
    from mteb_stratified.cli.main import main

    corpus = _beir(tmp_path / "beir", {d: small_corpus[d] for d in sorted(small_corpus)[:30]})
    one, two = str(tmp_path / "one"), str(tmp_path / "two")
    base = ["structure", "--corpus", corpus, "--no-progress", "--consensus-runs", "1",
            "--document-embedding", "static", "--entity-embedding", "static",
            "--max-doc-share", "0.3", "--json"]
    assert main(base + ["--out", one]) == 0
    built = _files(one)
    assert main(base + ["--out", two, "--min-doc-freq", "3"]) == 0
    other = _files(two)
    assert other["entities.jsonl.gz"] != built["entities.jsonl.gz"]
    capsys.readouterr()
    for name in ("entities", "doc_entities", "clusters", "cluster_levels"):
        shutil.copy(os.path.join(two, f"{name}.jsonl.gz"), one)
    assert main(base + ["--out", one]) == 0
    said = capsys.readouterr()
    summary = json.loads(said.out.strip().splitlines()[-1])
    assert summary["reused"] is False
    assert "not reused, it is built again" in said.err and "mixes files of two builds" in said.err
    assert _files(one) == built


def _orphan_writer(folder: str, name: str, *, hold: bool) -> subprocess.Popen:
    """A child in the middle of ``atomic_write(folder/name)``: SIGKILLed there (``hold``
    False: its temp file is an orphan), or waiting for a line on stdin (a live writer)."""
    end = ("sys.stdin.readline()" if hold
           else "os.kill(os.getpid(), signal.SIGKILL)")
    code = ("import os, signal, sys\n"
            f"sys.path.insert(0, {ROOT!r})\n"
            "from mteb_stratified.io.outputs import atomic_write\n"
            f"with atomic_write(os.path.join({folder!r}, {name!r})) as fh:\n"
            "    fh.write('half of it')\n"
            "    fh.flush()\n"
            "    print('ready', flush=True)\n"
            f"    {end}\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "ready"
    return child


def test_the_next_write_removes_a_killed_writers_temp_file_and_nothing_else(tmp_path):
    """#46.13b: a SIGKILL inside atomic_write leaves `.NAME.xxxxxxxx.tmp`; the next start of a
    write into that folder (here structure's save) removes it, but not a live writer's temp
    file, a symlink of that name (nor its target), a folder of that name or another name."""
    folder = str(tmp_path / "out")
    os.makedirs(folder)
    live = _orphan_writer(folder, "entities.jsonl.gz", hold=True)
    held = _temps(folder)
    killed = _orphan_writer(folder, "metadata.json", hold=False)
    assert killed.wait(timeout=60) == -signal.SIGKILL
    orphan = [n for n in _temps(folder) if n not in held]
    assert len(held) == 1 and len(orphan) == 1 and orphan[0].startswith(".metadata.json.")
    outside = tmp_path / "victim.txt"
    outside.write_text("keep me")
    os.symlink(outside, os.path.join(folder, ".x.json.abcdefgh.tmp"))
    os.mkdir(os.path.join(folder, ".y.json.abcdefgh.tmp"))
    (tmp_path / "out" / ".keep.tmp").write_text("not ours")
    try:
        StructureArtifact.bundled().save(folder)  # a new job writing into the folder
        left = _temps(folder)
        assert orphan[0] not in left
        assert set(held + [".x.json.abcdefgh.tmp", ".y.json.abcdefgh.tmp", ".keep.tmp"]) \
            <= set(left)
        assert outside.read_text() == "keep me"
        StructureArtifact.load(folder)
    finally:
        live.communicate("\n", timeout=60)
    assert live.returncode == 0 and held[0] not in _temps(folder)


REPORT_CODE = _child(
    "from mteb_stratified.cli.main import main",
    "assert main(args) == 0",
    "lambda a: any(os.path.basename(str(x)).lstrip('.').startswith('r.') for x in a)")


def _report_case(tmp_path) -> tuple[list, str, str]:
    """A small stratified report (the bundled artifact, 30 test queries scored (i % 10) / 10)
    and its paths."""
    from mteb_stratified.io import bundled_path, load_beir

    qids = sorted(load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels)[:30]
    res = tmp_path / "res"
    res.mkdir()
    mean = sum((i % 10) / 10 for i in range(len(qids))) / len(qids)
    (res / "StratifiedNFCorpus.json").write_text(json.dumps(
        {"task_name": "StratifiedNFCorpus", "dataset_revision": "x", "mteb_version": "2",
         "scores": {"test": [{"ndcg_at_10": mean, "main_score": mean,
                              "hf_subset": "default"}]}}))
    (res / "StratifiedNFCorpus_per_query.csv").write_text(
        "hf_subset,hf_split,qid,measure,expected,min,max,oblivious,range,bias\n" + "".join(
            f"default,test,{q},nDCG@10,{v},{v},{v},{v},0.0,0.0\n"
            for q, v in ((q, (i % 10) / 10) for i, q in enumerate(qids))))
    html, md = str(tmp_path / "rep" / "r.html"), str(tmp_path / "rep" / "r.md")
    argv = ["report", f"A={res / 'StratifiedNFCorpus.json'}", "--out", html, "--resamples",
            "10", "--alignment", "exact", "--no-progress"]
    return argv, html, md


@pytest.mark.slow
def test_a_kill_between_the_report_files_never_leaves_a_mismatched_pair(tmp_path):
    """#46.13c: report over an older report, SIGKILLed just after each of its file operations
    on r.html / r.md (the states a kill just before one leaves too, less a temp file): the
    folder then holds the old pair, or one file of the new pair alone, never an HTML beside
    another run's summary; a complete run's pair shares one stamp."""
    pytest.importorskip("matplotlib")
    from mteb_stratified.cli.main import main
    from mteb_stratified.report.render import report_pair_problem

    argv, html, md = _report_case(tmp_path)
    new_argv = [a if not a.startswith("A=") else "B=" + a[2:] for a in argv]  # another title
    assert main(argv) == 0
    old = _files(os.path.dirname(html))
    assert report_pair_problem(html, md) is None
    seen = []

    def reset():
        for name, data in old.items():
            with open(os.path.join(os.path.dirname(html), name), "wb") as fh:
                fh.write(data)

    def check(mode, k):
        got = _files(os.path.dirname(html))
        kinds = {n: "old" if b == old.get(n) else "new" for n, b in got.items()}
        seen.append((mode, k, kinds))
        assert len(set(kinds.values())) <= 1, f"a mismatched pair after a kill: {kinds}"
        if len(got) == 2:
            assert report_pair_problem(html, md) is None

    total = _kill_each(REPORT_CODE, new_argv, reset, check, modes=("after",))
    assert total["after"] >= 4, seen  # two removals, two renames
    assert report_pair_problem(html, md) is None
    assert _files(os.path.dirname(html)) != old


def test_a_pair_from_two_runs_is_told_apart(tmp_path):
    """#46.13c: the stamp the HTML and the Markdown share tells a pair of one run from files
    of two runs (as two concurrent runs on one -o could leave), and from a missing file."""
    from mteb_stratified.io.outputs import write_together
    from mteb_stratified.report.render import _stamped, report_pair_problem

    html, md = str(tmp_path / "r.html"), str(tmp_path / "r.md")
    first, second = _stamped("<html>1</html>", "# 1\n"), _stamped("<html>2</html>", "# 2\n")
    write_together([(html, first[0]), (md, first[1])])
    assert report_pair_problem(html, md) is None
    write_together([(md, second[1])])
    assert "different runs" in report_pair_problem(html, md)
    os.remove(md)
    assert "cannot be read" in report_pair_problem(html, md)
