"""File input/output (stdlib + numpy only): TREC runs and qrels, BEIR folders, JSON dicts."""

from .beir import BeirDataset, bundled_path, dataset_folder, load_beir, load_corpus, qrels_splits
from .files import open_text, read_qrels, read_run, write_run

__all__ = ["read_run", "read_qrels", "write_run", "open_text", "load_beir", "BeirDataset",
           "bundled_path", "dataset_folder", "load_corpus", "qrels_splits"]
