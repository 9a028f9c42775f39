"""Tests of mteb_stratified.core.ranking."""
