"""Analyses over the views that compare runs: `diff` (a regression gate) and `trend` (one metric
over many runs)."""
