"""Reporting: the stratified report built as data (:mod:`.build`: :func:`build` returns a
:class:`Report`); what its renderers read (:mod:`.model`: :class:`ReportModel`), its words
(:mod:`.prose`) and figures (:mod:`.figures`); its HTML page and Markdown summary
(:mod:`.render`); and the readers of per-query values it takes (:mod:`.inputs`).  The strata
themselves: :mod:`mteb_stratified.stratification`."""

from .build import Report, build
from .model import ReportModel, build_report
from .render import render_html, to_markdown, write_html
from .inputs import (find_per_query, load_results_json, per_query_from_dicts, per_query_from_run,
                     read_per_query_csv)

__all__ = ["Report", "ReportModel", "build", "build_report", "render_html", "to_markdown",
           "write_html", "find_per_query", "load_results_json", "per_query_from_dicts",
           "per_query_from_run", "read_per_query_csv"]
