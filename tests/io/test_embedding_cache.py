"""The embedding cache (mteb_stratified/io/embedding_cache.py): an entry is reused only for its
own model, precision, texts and recipe, says why it is not, and is never read half written."""

from __future__ import annotations

import json
import logging
import os
import shutil
import warnings

import numpy as np
import pytest

from mteb_stratified.core.errors import InputWarning
from mteb_stratified.io import embedding_cache as ec

TEXTS = ["a first document", "a second one", "the third"]


def _key(*, model="m1", precision="float32", texts=TEXTS, recipe=None) -> ec.EmbeddingKey:
    digest, n = ec.texts_hash(texts)
    return ec.EmbeddingKey({"name": model, "path": f"/models/{model}",
                            "files_sha256": f"sha-of-{model}"}, precision, digest, n,
                           recipe or {"batch_size": 64})


def _rows(seed=0, n=3) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, 8)).astype(np.float32)


def test_a_stored_entry_is_read_back_bit_for_bit(tmp_path):
    cache = ec.EmbeddingCache(str(tmp_path))
    rows = _rows()
    path = cache.put(_key(), rows)
    found = cache.get(_key())
    assert found.path == path and found.reasons == ()
    assert found.array.dtype == np.float32 and np.array_equal(found.array, rows)
    record = json.load(open(path[:-4] + ".json", encoding="utf-8"))
    assert record["precision"] == "float32" and record["n_texts"] == 3
    assert record["model"]["files_sha256"] == "sha-of-m1" and record["shape"] == [3, 8]


def test_the_text_hash_follows_every_text_and_their_order():
    base = ec.texts_hash(TEXTS)
    assert base == ec.texts_hash(list(TEXTS))
    assert ec.texts_hash(TEXTS[::-1]) != base
    assert ec.texts_hash(TEXTS[:2] + ["the third."]) != base
    assert ec.texts_hash(TEXTS[:2]) != base and ec.texts_hash([]) != ec.texts_hash([""])
    # a text is hashed alone: moving characters across a boundary changes the key
    assert ec.texts_hash(["ab", "c"]) != ec.texts_hash(["a", "bc"])


@pytest.mark.parametrize("other, words", [
    (dict(model="m2"), "another model (m2"),
    (dict(precision="bf16"), "another precision (bf16, not float32)"),
    (dict(texts=TEXTS[:2] + ["changed"]), "other texts"),
    (dict(recipe={"batch_size": 16}), "another recipe (batch_size differ)"),
])
def test_a_planted_entry_of_another_key_is_never_returned_and_says_why(tmp_path, other, words):
    """The entry of another model, precision, text or recipe, copied to the place of this
    key's (a cache folder copied between machines, a hash-prefix collision, a hand edit):
    its record is read, the array is not returned, and the warning names the difference."""
    cache = ec.EmbeddingCache(str(tmp_path))
    planted = cache.put(_key(**other), _rows(1))
    mine = cache.path(_key())
    assert planted != mine
    shutil.copy(planted, mine)
    shutil.copy(planted[:-4] + ".json", mine[:-4] + ".json")
    with pytest.warns(InputWarning, match="not reused") as seen:
        found = cache.get(_key())
    assert found.array is None and any(words in r for r in found.reasons), found.reasons
    assert words in str(seen[0].message)
    # computed again and stored in its place: the next read is this key's own rows
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        rows, path = cache.get_or_compute(_key(), lambda: _rows(2))
    assert path == mine and np.array_equal(rows, _rows(2))
    assert np.array_equal(cache.get(_key()).array, _rows(2))


@pytest.mark.parametrize("other, words", [
    (dict(model="m2"), "model (m2"), (dict(precision="bf16"), "precision (bf16"),
])
def test_a_plain_miss_says_which_entries_of_the_same_texts_were_not_taken(tmp_path, caplog,
                                                                          other, words):
    cache = ec.EmbeddingCache(str(tmp_path))
    cache.put(_key(**other), _rows(1))
    with caplog.at_level(logging.INFO, logger="mteb_stratified.embedding_cache"):
        found = cache.get(_key())
    assert found.array is None and len(found.reasons) == 1 and words in found.reasons[0]
    assert words in caplog.text
    # another corpus is no reason worth a word: its entry is not looked at
    assert cache.get(_key(texts=["unrelated"])).reasons == ()


@pytest.mark.parametrize("damage", ["truncate", "flip", "no-record", "bad-record"])
def test_a_damaged_entry_is_computed_again(tmp_path, damage):
    cache = ec.EmbeddingCache(str(tmp_path))
    path = cache.put(_key(), _rows())
    meta = path[:-4] + ".json"
    if damage == "truncate":
        with open(path, "r+b") as fh:
            fh.truncate(os.path.getsize(path) - 5)
    elif damage == "flip":
        data = bytearray(open(path, "rb").read())
        data[-1] ^= 0xFF
        open(path, "wb").write(bytes(data))
    elif damage == "no-record":
        os.unlink(meta)
    else:
        open(meta, "w").write("{not json")
    with pytest.warns(InputWarning, match="computed again"):
        rows, _ = cache.get_or_compute(_key(), lambda: _rows(3))
    assert np.array_equal(rows, _rows(3))
    assert np.array_equal(cache.get(_key()).array, _rows(3))


def test_a_failed_write_leaves_no_entry(tmp_path, monkeypatch):
    """The array is written through a temp file and renamed; a crash while writing leaves no
    file under the entry's name (and no record), so nothing half written is ever read."""
    cache = ec.EmbeddingCache(str(tmp_path))

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np.lib.format, "write_array", boom)
    with pytest.raises(OSError, match="disk full"):
        cache.put(_key(), _rows())
    assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    assert cache.get(_key()).array is None


def test_rows_must_match_the_texts(tmp_path):
    with pytest.raises(ValueError, match="one row per text"):
        ec.EmbeddingCache(str(tmp_path)).put(_key(), _rows(n=2))


def test_where_it_lives_is_read_at_each_call(tmp_path, monkeypatch):
    monkeypatch.delenv(ec.ENV, raising=False)
    monkeypatch.setenv("MTEB_STRATIFIED_CACHE", str(tmp_path / "root"))
    assert ec.cache_folder() == str(tmp_path / "root" / "embeddings")
    monkeypatch.delenv("MTEB_STRATIFIED_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert ec.cache_folder() == str(tmp_path / "xdg" / "mteb_stratified" / "embeddings")
    monkeypatch.setenv(ec.ENV, str(tmp_path / "env"))
    assert ec.cache_folder() == str(tmp_path / "env")
    with ec.using(str(tmp_path / "flag")):  # the command's flag wins over the environment
        assert ec.cache_folder() == str(tmp_path / "flag")
        with ec.using(None):
            assert ec.cache_folder() == str(tmp_path / "flag")
    assert ec.cache_folder() == str(tmp_path / "env")
    for off in ("off", "OFF", "none"):
        monkeypatch.setenv(ec.ENV, off)
        assert ec.cache_folder() is None and ec.default_cache() is None
    with ec.using("off"):
        monkeypatch.setenv(ec.ENV, str(tmp_path / "env"))
        assert ec.cache_folder() is None


def test_a_cache_that_cannot_be_written_warns_and_keeps_the_work_done(tmp_path):
    """A full, read-only or misplaced cache folder costs the cache, not the embedding just
    computed: the rows come back with no path, and a warning says what failed."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    cache = ec.EmbeddingCache(str(blocker / "sub"))     # a folder under a file: NotADirectory
    calls = []
    with pytest.warns(InputWarning, match="could not be stored in the cache"):
        rows, path = cache.get_or_compute(_key(), lambda: calls.append(1) or _rows())
    assert calls == [1] and path is None and np.array_equal(rows, _rows())


@pytest.mark.parametrize("field, value", [("model", "m@abc"), ("recipe", ["batch_size"]),
                                          ("model", None), ("recipe", 7)])
def test_a_record_with_fields_of_the_wrong_type_is_not_reused_and_gives_no_traceback(
        tmp_path, field, value):
    cache = ec.EmbeddingCache(str(tmp_path))
    path = cache.put(_key(), _rows())
    other = cache.put(_key(precision="bf16"), _rows(1))
    for p in (path, other):
        meta = p[:-4] + ".json"
        record = json.load(open(meta, encoding="utf-8"))
        record[field] = value
        json.dump(record, open(meta, "w", encoding="utf-8"))
    with pytest.warns(InputWarning, match="not reused"):
        found = cache.get(_key())
    assert found.array is None and found.reasons
    assert cache.get(_key(precision="int8")).array is None     # a plain miss scans siblings


@pytest.mark.parametrize("folder", ["", "  "])
def test_an_empty_folder_name_is_refused_not_taken_for_the_working_directory(folder):
    from mteb_stratified.core.errors import InputError
    with pytest.raises(InputError, match="empty string"):
        with ec.using(folder):
            pass
    assert ec.cache_folder() != os.path.abspath("")
