"""Tests of mteb_stratified.core (mirrors the package tree)."""
