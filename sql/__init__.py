"""tracewh's SQL library: one DuckDB view or table macro per .sql file (see README)."""
