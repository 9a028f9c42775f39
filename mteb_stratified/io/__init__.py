"""File input/output (stdlib + numpy only), above the core and the naming table.

* :mod:`.files` — TREC runs and qrels, BEIR qrels TSV, JSON dicts (gzip ok), with FILE:LINE
  errors;
* :mod:`.beir` — BEIR folders and the bundled NFCorpus;
* :mod:`.mteb_results` — MTEB output folders: TaskResults, their model, the per-query CSV;
* :mod:`.corpus_text` — the one document-text joiner;
* :mod:`.outputs` — output paths checked before work, safe names, atomic writes;
* :mod:`.lock` — the lock that keeps two jobs out of one output folder.
"""

from ..core._lazy import lazy_attributes

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


__getattr__, __dir__ = lazy_attributes(__name__, globals(), _LAZY)
