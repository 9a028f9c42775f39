"""A missing extra names the exact command that installs it, from a clone and from an index."""

import pytest

from mteb_stratified._optional import install_hint, require


def test_require_names_the_install_command():
    with pytest.raises(ImportError) as err:
        require("no_such_module_for_mteb_stratified", "plots")
    text = str(err.value)
    assert 'pip install ".[plots]" in a clone of mteb-stratified' in text
    assert 'pip install "mteb-stratified[plots]"' in text
    assert require("json", "none").dumps([1]) == "[1]"


def test_the_cli_prints_it_and_exits_2(monkeypatch, capsys, tmp_path):
    import sys

    from mteb_stratified.cli.main import main

    monkeypatch.setitem(sys.modules, "bm25s", None)  # `import bm25s` now fails, as if missing
    assert main(["demo", "-o", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert install_hint("bm25") in err and "Traceback" not in err
