"""write_beir: the folder it writes loads back, copies are byte for byte, the same input gives
the same bytes, and a split name cannot choose where it writes."""

import os

import pytest

from mteb_stratified.core import InputError
from mteb_stratified.io import bundled_path, load_beir
from mteb_stratified.io.beir import qrels_tsv, write_beir

CORPUS = {"d2": {"title": "Zwei", "text": "über Knochen"}, "d1": {"title": "", "text": "bones"}}
QUERIES = [{"_id": "q1", "text": "vitamin d", "origin": "original"},
           {"_id": "g1", "text": "grüner tee", "origin": "generated", "metadata": {"seed": 0}}]


def test_the_folder_loads_back_and_copies_are_byte_for_byte(tmp_path):
    src = os.path.join(bundled_path("nfcorpus"), "qrels", "dev.tsv")
    paths = write_beir(tmp_path, corpus=CORPUS, queries=QUERIES, copied={"dev": src},
                       qrels={"test": {"q1": {"d2": 1, "d1": 2}}, "generated": {"g1": {"d1": 1}}})
    assert paths["qrels"]["dev"] == os.path.join(str(tmp_path), "qrels", "dev.tsv")
    assert open(paths["qrels"]["dev"], "rb").read() == open(src, "rb").read()
    test = load_beir(tmp_path, "test")
    assert test.corpus == CORPUS and test.queries == {"q1": "vitamin d"}
    assert test.qrels == {"q1": {"d1": 2, "d2": 1}}
    generated = load_beir(tmp_path, "generated", corpus=False)
    assert generated.generated() == ["g1"]
    assert open(paths["qrels"]["test"]).read() == ("query-id\tcorpus-id\tscore\n"
                                                  "q1\td1\t2\nq1\td2\t1\n")
    assert open(paths["queries"], encoding="utf-8").read().count("grüner") == 1  # UTF-8, no \\u


def test_the_same_input_gives_the_same_bytes(tmp_path):
    for name in ("a", "b"):
        write_beir(tmp_path / name, corpus=CORPUS, queries=QUERIES)
    for f in ("corpus.jsonl.gz", "queries.jsonl"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()
    assert not (tmp_path / "a" / "qrels" / "test.tsv").exists()  # only the parts given
    assert qrels_tsv({}) == "query-id\tcorpus-id\tscore\n"


@pytest.mark.parametrize("split", ["../escape", "a/b", "..", ""])
def test_a_split_name_cannot_choose_where_it_writes(tmp_path, split):
    with pytest.raises(InputError, match="cannot be a qrels file name"):
        write_beir(tmp_path / "out", qrels={split: {"q": {"d": 1}}})
    assert not (tmp_path / "escape.tsv").exists() and not (tmp_path / "out").exists()
