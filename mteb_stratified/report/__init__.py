"""Stratified reporting: strata of a dataset, the JSON ``strata`` block, HTML/Markdown reports."""

from .html import build_report, render_html, to_markdown, write_html
from .inputs import find_per_query, load_results_json, per_query_from_run, read_per_query_csv
from .summary import (ALIGNMENTS, TIE_KEYS, align_strata, cluster_weights, corpus_bins, flat_strata_scores,
                      metric_key, reference_bins, stability_summary, strata_for_dataset, stratified_summary)

__all__ = ["build_report", "render_html", "to_markdown", "write_html", "find_per_query",
           "load_results_json", "per_query_from_run", "read_per_query_csv", "TIE_KEYS",
           "align_strata", "cluster_weights", "corpus_bins", "stability_summary",
           "strata_for_dataset", "stratified_summary", "flat_strata_scores", "metric_key", "reference_bins",
           "ALIGNMENTS"]
