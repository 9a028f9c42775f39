"""File input/output (stdlib + numpy only), above the core and the naming table.

* :mod:`.files` — TREC runs and qrels, BEIR qrels TSV, JSON dicts (gzip ok), with FILE:LINE
  errors;
* :mod:`.beir` — BEIR folders and the bundled NFCorpus;
* :mod:`.mteb_results` — MTEB output folders: TaskResults, their model, the per-query CSV;
* :mod:`.corpus_text` — the one document-text joiner;
* :mod:`.outputs` — output paths checked before work, safe names, atomic writes;
* :mod:`.lock` — the lock that keeps two jobs out of one output folder.
"""

import importlib
import importlib.util

#: The public names by module, imported on first access (PEP 562 ``__getattr__`` below), so a
#: light submodule (``io.numbers``, ``io.outputs``) loads without numpy or the readers.
_LAZY_MODULES = {
    "beir": ("BeirDataset", "bundled_path", "dataset_folder", "load_beir", "load_corpus",
             "qrels_splits"),
    "files": ("open_text", "read_qrels", "read_run", "read_run_arrays", "write_run"),
}
_LAZY = {name: module for module, names in _LAZY_MODULES.items() for name in names}

__all__ = ["read_run", "read_run_arrays", "read_qrels", "write_run", "open_text", "load_beir",
           "BeirDataset", "bundled_path", "dataset_folder", "load_corpus", "qrels_splits"]


def __getattr__(name: str):
    """Import a public name's module on first access and cache the name here; a submodule's
    name imports it (``package.submodule`` works without its own import, as when this
    ``__init__`` imported it eagerly)."""
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    elif not name.startswith("__") and importlib.util.find_spec(f"{__name__}.{name}"):
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    """The module's names, the lazy ones included (for completion and ``help``)."""
    return sorted(set(globals()) | set(_LAZY))
