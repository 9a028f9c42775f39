"""Tests of mteb_stratified.core.stats."""
