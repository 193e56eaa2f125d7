"""A run as the `traces` log describes it: what `tracewh runs`, `trend` and the check of a
command's run names read. Its own module, so that a command answered from tracewh.duckdb (see
`query.prepared`) reads the runs the file records without importing the catalog (pyarrow,
delta-rs)."""

from dataclasses import dataclass


@dataclass
class RunInfo:
    """A run: its first commit, its phases, the tags of its first trace."""

    run: str
    first_seq: int
    phases: set
    tags: dict  # of its first trace
