"""A damaged artifact folder is an InputError naming the file (and line) and how to fix it."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from mteb_stratified.cli.main import main
from mteb_stratified.core.errors import InputError
from mteb_stratified.structure.artifact import ARTIFACT_FORMAT, StructureArtifact


def _artifact(folder) -> str:
    meta = {"format": ARTIFACT_FORMAT, "corpus": {"fingerprint": "sha256:x", "n_docs": 2},
            "extractor": {"kind": "offline", "init_params": {}}, "parameters": {}}
    art = StructureArtifact(
        meta, [{"name": "vitamin d", "cluster": 0, "aliases": []}],
        {"d1": ["vitamin d"], "d2": []},
        [{"id": 0, "label": "vitamin d", "mass": 1.0, "size": 1, "terms": ["vitamin"]}],
        {"d1": {"0": 1.0}, "d2": {}})
    return art.save(str(folder))


def _gz(path, text: bytes) -> None:
    with gzip.open(path, "wb") as fh:
        fh.write(text)


def test_a_saved_artifact_loads_and_leaves_no_temp_file(tmp_path):
    folder = _artifact(tmp_path / "a")
    art = StructureArtifact.load(folder)
    assert art.doc_cluster_weights == {"d1": {0: 1.0}, "d2": {}}
    assert sorted(os.listdir(folder)) == sorted(
        ["metadata.json", "entities.jsonl.gz", "doc_entities.jsonl.gz", "clusters.jsonl.gz",
         "doc_clusters.jsonl.gz", "cluster_levels.jsonl.gz"])


META_CASES = [
    ('{"format": "%s", "corpus": ' % ARTIFACT_FORMAT, "not valid JSON", 1),
    ('{\n"format": "%s",\n"corpus": {,}}' % ARTIFACT_FORMAT, "not valid JSON", 3),
    ("[1, 2]", "must hold a JSON object", 1),
    (json.dumps({"format": ARTIFACT_FORMAT}), "corpus is missing", None),
    (json.dumps({"format": ARTIFACT_FORMAT, "corpus": {"fingerprint": 3, "n_docs": 2},
                 "extractor": {"kind": "offline"}, "parameters": {}}),
     "corpus.fingerprint is of the wrong type", None),
    (json.dumps({"format": ARTIFACT_FORMAT, "corpus": {"fingerprint": "x", "n_docs": 2},
                 "extractor": "offline", "parameters": {}}), "extractor is of the wrong type",
     None),
    (json.dumps({"format": ARTIFACT_FORMAT, "corpus": {"fingerprint": "x", "n_docs": "2"},
                 "extractor": {"kind": "offline"}, "parameters": {}}),
     "n_docs is of the wrong type", None),
]


def _meta(**extra) -> str:
    return json.dumps({"format": ARTIFACT_FORMAT, "corpus": {"fingerprint": "x", "n_docs": 2},
                       "extractor": {"kind": "offline"}, "parameters": {}, **extra})


BAD_METADATA = [
    pytest.param('{"format": ' * 100000 + "1" + "}" * 100000, "nested too deeply", 1,
                 id="deep"),
    ('{"format": "%s", "format": "%s"}' % (ARTIFACT_FORMAT, ARTIFACT_FORMAT), "twice", 1),
    (_meta(bins=[["dispersion", [0.5, 0.75]]]), "bins is of the wrong type", None),
    (_meta(bins={"dispersion": [0.75, 0.5], "alignment": [0.2, 0.5]}), "bins.dispersion", None),
    (_meta(bins={"dispersion": [0.5, 0.75], "alignment": "0.2,0.5"}), "bins.alignment", None),
    (_meta(bins={"dispersion": [0.5, 0.75], "alignment": [0.2, 2.0]}), "bins.alignment", None),
    (_meta(bins={"dispersion": [0.5], "alignment": [0.2], "alignment_soft": [float("nan")]}),
     "bins.alignment_soft", None),
    (_meta(bins={"dispersion": [0.5], "alignment": [0.2], "tau": True}), "bins.tau", None),
]


@pytest.mark.parametrize("text,message,line", META_CASES + BAD_METADATA,
                         ids=lambda v: str(v)[:60] if not isinstance(v, int) else str(v))
def test_a_corrupt_metadata_json(tmp_path, text, message, line):
    folder = _artifact(tmp_path / "a")
    path = os.path.join(folder, "metadata.json")
    with open(path, "w") as fh:
        fh.write(text)
    with pytest.raises(InputError, match=message) as exc:
        StructureArtifact.load(folder)
    assert exc.value.source == path and exc.value.line == line
    assert "rebuild" in exc.value.fix


TABLE_CASES = [
    ("entities", b"not gzip at all", "not a JSON line", 1),
    ("entities", "truncated", "damaged gzip table", None),
    ("doc_entities", b'{"doc_id": "d1", "entities": []}\n{"doc_id": "d2", "ent', "not a JSON line",
     2),
    ("doc_clusters", b'{"doc_id": "d1"}\n', "no 'weights' field", 1),
    ("doc_clusters", b'{"doc_id": "d1", "weights": {"0": "heavy"}}\n', "numbers", 1),
    ("clusters", b'{"id": "0", "label": "x", "mass": 1}\n', "'id' is of the wrong type", 1),
    ("clusters", b'[1]\n', "must be a JSON object", 1),
    ("entities", b'{"name": "x", "cluster": true}\n', "'cluster' is of the wrong type", 1),
    ("doc_entities", b'{"doc_id": "d1", "entities": [1]}\n', "list of strings", 1),
    ("entities", b'\xff\xfe\n', "not UTF-8 text", 1),
    ("entities", b'{"name": "x", "cluster": 0, "aliases": 5}\n', "'aliases' is of the wrong",
     1),
]


@pytest.mark.parametrize("table,content,message,line", TABLE_CASES)
def test_a_corrupt_table(tmp_path, table, content, message, line):
    folder = _artifact(tmp_path / "a")
    path = os.path.join(folder, f"{table}.jsonl.gz")
    if content == "truncated":
        data = open(path, "rb").read()
        with open(path, "wb") as fh:
            fh.write(data[: len(data) // 2])
    elif content.startswith(b"not gzip"):  # read as text, as every input may be
        with open(path, "wb") as fh:
            fh.write(content)
    else:
        _gz(path, content)
    with pytest.raises(InputError, match=message) as exc:
        StructureArtifact.load(folder)
    assert exc.value.source == path and "rebuild" in exc.value.fix
    if line is not None:
        assert exc.value.line == line


def test_the_cli_prints_file_line_and_fix(tmp_path, capsys):
    folder = _artifact(tmp_path / "a")
    path = os.path.join(folder, "doc_entities.jsonl.gz")
    _gz(path, b'{"doc_id": "d1", "entities": []}\n{oops\n')
    code = main(["stratify", str(tmp_path / "none.json"), "--structure", folder])
    assert code == 2  # the results file is checked first: still a clear error
    code = main(["generate", "--dataset", "nfcorpus", "--structure", folder, "--budget", "5",
                 "--out", str(tmp_path / "o"), "--model", "m", "--api-key", "none",
                 "--base-url", "http://127.0.0.1:9/v1", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and f"{path}:2: not a JSON line" in err and "fix: rebuild" in err
    assert "Traceback" not in err


#: Tables the io layer's reader and JSON parser guard (issue #15): each refused with its line.
HARDENED_CASES = [
    ("doc_clusters", b'{"doc_id": "d1", "weights": {"0": NaN}}\n', "finite numbers >= 0", 1),
    ("doc_clusters", b'{"doc_id": "d1", "weights": {"0": -1.0}}\n', "finite numbers >= 0", 1),
    ("doc_clusters", b'{"doc_id": "d1", "weights": {"0": 1e999}}\n', "finite numbers >= 0", 1),
    ("doc_clusters", b'{"doc_id": "d1", "weights": {"0": ' + b"9" * 400 + b'}}\n',
     "finite numbers >= 0", 1),
    ("doc_clusters", '{"doc_id": "d1", "weights": {"²": 1.0}}\n'.encode(), "cluster ids", 1),
    ("doc_clusters", '{"doc_id": "d1", "weights": {"٣": 1.0}}\n'.encode(), "cluster ids", 1),
    ("doc_clusters", b'{"doc_id": "d1", "weights": {"0": 1.0, "0": 2.0}}\n', "'0' twice", 1),
    ("clusters", b'{"id": 0, "label": "x", "mass": NaN}\n', "'mass' is NaN: expected a finite",
     1),
    ("clusters", b'{"id": 0, "label": "x", "mass": Infinity}\n', "'mass' is Infinity", 1),
    ("entities", b'{"name": "x", "cluster": 0, "centrality": NaN}\n', "'centrality'", 1),
    pytest.param("entities", b'{"name": "x", "cluster": 0}\n' + b"[" * 100000
                 + b"]" * 100000 + b"\n", "nested too deeply", 2, id="deep-line"),
    ("doc_entities", b'{"doc_id": "d1", "doc_id": "d2", "entities": []}\n', "twice", 1),
]


@pytest.mark.parametrize("table,content,message,line", HARDENED_CASES,
                         ids=lambda v: str(v)[:60] if not isinstance(v, int) else str(v))
def test_a_table_with_a_non_finite_number_bad_key_or_deep_line_is_refused(
        tmp_path, table, content, message, line):
    folder = _artifact(tmp_path / "a")
    path = os.path.join(folder, f"{table}.jsonl.gz")
    _gz(path, content)
    with pytest.raises(InputError, match=message) as exc:
        StructureArtifact.load(folder)
    assert exc.value.source == path and exc.value.line == line
    assert "rebuild" in exc.value.fix


def test_a_decompression_bomb_table_is_refused(tmp_path, monkeypatch):
    import mteb_stratified.io.files as files
    monkeypatch.setattr(files, "GZIP_FLOOR_BYTES", 1000)  # the bound, not 256 MiB of zeros
    folder = _artifact(tmp_path / "a")
    path = os.path.join(folder, "doc_entities.jsonl.gz")
    _gz(path, b'{"doc_id": "d1", "entities": []}\n' + b" " * 1_000_000 + b"\n")
    with pytest.raises(InputError, match="decompression bomb") as exc:
        StructureArtifact.load(folder)
    assert exc.value.source == path and exc.value.line is not None
    assert "rebuild" in exc.value.fix and files.GZIP_RATIO_ENV in exc.value.fix


def test_an_empty_table_has_no_rows(tmp_path):
    meta = {"format": ARTIFACT_FORMAT, "corpus": {"fingerprint": "sha256:x", "n_docs": 1},
            "extractor": {"kind": "offline", "init_params": {}}, "parameters": {}}
    folder = StructureArtifact(meta, [], {"d1": []}, [{"id": 0, "label": "x", "mass": 0.0, "terms": []}],
                               {"d1": {}}).save(str(tmp_path / "a"))
    art = StructureArtifact.load(folder)
    assert art.entities == [] and art.doc_cluster_weights == {"d1": {}} and art.n_clusters == 1


def test_a_metadata_json_that_is_a_folder_is_an_input_error(tmp_path, capsys):
    folder = _artifact(tmp_path / "a")
    path = os.path.join(folder, "metadata.json")
    os.remove(path)
    os.mkdir(path)
    with pytest.raises(InputError, match="is a folder") as exc:
        StructureArtifact.load(folder)
    assert exc.value.source == path and "rebuild" in exc.value.fix


def test_the_cli_names_the_line_of_a_nan_weight(tmp_path, capsys):
    folder = _artifact(tmp_path / "a")
    path = os.path.join(folder, "doc_clusters.jsonl.gz")
    _gz(path, b'{"doc_id": "d1", "weights": {"0": 1.0}}\n{"doc_id": "d2", "weights": '
              b'{"0": NaN}}\n')
    code = main(["generate", "--dataset", "nfcorpus", "--structure", folder, "--budget", "5",
                 "--out", str(tmp_path / "o"), "--model", "m", "--api-key", "none",
                 "--base-url", "http://127.0.0.1:9/v1", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and f"{path}:2: doc_clusters field 'weights' is" in err
    assert "fix: rebuild" in err and "Traceback" not in err


@pytest.mark.parametrize("work_json, line", [
    ("{not json", '{"doc_id": "d1", "entities": []}\n'),
    ('["a list"]', '{"doc_id": "d1", "entities": []}\n'),
    (None, '{"no_doc_id": 1}\n{"doc_id": "d2", "entities": []}\n'),
    (None, '[1, 2]\n'),
])
def test_a_damaged_extraction_checkpoint_starts_over_or_keeps_its_good_rows(tmp_path, work_json,
                                                                            line):
    """The checkpoint is our own file, but a crash or a full disk can leave it damaged: an
    unreadable ``work.json`` starts the extraction over, and a row that is not ours ends the
    rows that are kept; neither is a traceback."""
    from mteb_stratified.structure.extraction import Checkpoint

    work = tmp_path / "work"
    first = Checkpoint(str(work), "key-1")
    first.append([{"doc_id": "d0", "entities": []}])
    if work_json is not None:
        (work / "work.json").write_text(work_json)
    with open(work / "extraction.jsonl", "a") as fh:
        fh.write(line)
    again = Checkpoint(str(work), "key-1")
    done = again.load()
    assert done == ({} if work_json is not None else {"d0": {"doc_id": "d0", "entities": []}})


def test_an_artifact_from_before_the_leaves_names_the_rebuild(tmp_path, capsys):
    """Format 3 (31 clusters, frequent-entity labels, no terms) is refused, never read as if
    its clusters were leaves: the message says what format 4 adds and how to rebuild."""
    folder = _artifact(tmp_path / "a")
    path = os.path.join(folder, "metadata.json")
    meta = json.load(open(path))
    meta["format"] = "mteb-stratified/structure/3"
    with open(path, "w") as fh:
        json.dump(meta, fh)
    with pytest.raises(InputError) as exc:
        StructureArtifact.load(folder)
    assert "older format (mteb-stratified/structure/3)" in exc.value.message
    assert "leaves" in exc.value.message and "terms" in exc.value.message
    assert "cluster tree" not in exc.value.message     # format 3 had the tree already
    assert "mteb-stratified structure --corpus" in exc.value.fix
    assert main(["generate", "--dataset", "nfcorpus", "--structure", folder, "--out",
                 str(tmp_path / "g"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "older format" in err and "structure --corpus" in err and "Traceback" not in err
