"""The suite's own configuration (tests/conftest.py)."""

from __future__ import annotations

import pathlib

import conftest

REPO = pathlib.Path(__file__).resolve().parents[1]


def test_the_longest_files_listed_first_exist():
    """A renamed file would silently lose its place at the head of the run."""
    missing = [p for p in conftest.LONGEST_FIRST + conftest.REAL_SERVER_FILES
               if not (REPO / p).is_file()]
    assert not missing, missing
