"""The rows of the `critical_path` view (the job's critical path of each step across the ranks
of a run and phase), computed once per refresh for its mart instead of by the view's
recursive SQL at every question: over DeepSeek's 254 MB rank that SQL took 2.6-5.8 s, over 64
such ranks more than a minute, because it walks every rank's candidate path through every
collective on it and holds each candidate's rows.

The rule is the view's (sql/critical_path.sql), and so are the rows (tests compare them): a
stored path or segment of `critical_path_edges` (a group: run, phase, rank, trace, step and
segment) turns at its last communication kernel (its cut) to the segment of the rank that
arrived last at that kernel's collective instance (`_collective_matches`), else to the rank's
own segment into the kernel, else nowhere. Each rank's walk from its step's path is a
candidate; the job's path is the longest (the lowest rank of a tie). Here DuckDB sums each
group's rows after its cut and joins each cut to where it turns (set work), then the walks
are followed in Python, a group's length from it on computed once for every walk that
reaches it, and only the chosen walk's rows are read back.
"""

import pyarrow as pa

from ..query.engine_memory import give_back_freed_memory
from ..query.library import helper_select

# Each group: its cut (the last communication kernel's seq, NULL: none), the kernel there,
# and the rows after the cut, summed; each cut's turn: the group the walk goes on along
# (that of the last rank's call when it has a segment, else the rank's own), whether it
# jumped, and the instance's last arrival.
GROUPS = """
WITH keyed AS NOT MATERIALIZED (  -- read by each use for its own columns: held whole, the
                                  -- 64 ranks' 26M rows took 29 of the query's 30 s
  SELECT run, phase, rank, trace_id, coalesce(step, '') AS step_key,
         coalesce(segment_of, -1) AS segment_key, seq, bound_by, ns, start_ns, end_ns, name,
         event_table, event_index
  FROM critical_path_edges
),
totals AS MATERIALIZED (
  SELECT run, phase, rank, trace_id, step_key, segment_key, sum(ns) AS ns, count(*) AS n
  FROM keyed
  GROUP BY ALL
),
cuts AS MATERIALIZED (
  SELECT trace_id, step_key, segment_key, max(seq) AS cut,
         arg_max(start_ns, seq) AS cut_start, arg_max(end_ns, seq) AS cut_end,
         arg_max(event_index, seq) AS cut_event, arg_max(name, seq) AS cut_name,
         arg_max(event_table, seq) AS cut_table
  FROM keyed
  WHERE event_table = 'kernels' AND bound_by = 'gpu_communication_bound'
  GROUP BY ALL
),
before AS (
  -- each group's rows up to its cut (the rest, summed from the totals, is what the walk
  -- keeps: one pass and a join of the rows to the few cuts, not the rows to every group)
  SELECT k.trace_id, k.step_key, k.segment_key, sum(k.ns) AS ns, count(*) AS n
  FROM keyed AS k
  JOIN cuts AS c
    ON k.trace_id = c.trace_id AND k.step_key = c.step_key AND k.segment_key = c.segment_key
   AND k.seq <= c.cut
  GROUP BY ALL
),
groups AS (
  SELECT t.run, t.phase, t.rank, t.trace_id, t.step_key, t.segment_key, c.cut,
         t.ns - coalesce(b.ns, 0) AS after_ns, t.n - coalesce(b.n, 0) AS after_rows,
         c.cut_start, c.cut_end, c.cut_event, c.cut_name, c.cut_table
  FROM totals AS t
  LEFT JOIN cuts AS c USING (trace_id, step_key, segment_key)
  LEFT JOIN before AS b USING (trace_id, step_key, segment_key)
),
segments AS MATERIALIZED (
  SELECT trace_id, segment_key, min(step_key) AS step_key
  FROM totals
  WHERE segment_key <> -1
  GROUP BY ALL
),
calls AS MATERIALIZED (
  SELECT run, phase, rank, trace_id, event_index, capture_group, process_group, seq, matched,
         last_rank, last_start_ns
  FROM ({matches}) AS matches
)
SELECT g.run, g.phase, g.rank, g.trace_id, g.step_key, g.segment_key, g.cut, g.after_ns,
       g.after_rows, g.cut_start, g.cut_end, g.cut_event, g.cut_name, g.cut_table,
       coalesce(m.matched, false) AS matched, m.last_start_ns, j.trace_id IS NOT NULL AS jumps,
       CASE WHEN j.trace_id IS NOT NULL THEN l.rank ELSE g.rank END AS next_rank, coalesce(j.trace_id, g.trace_id) AS next_trace,
       coalesce(j.step_key, o.step_key) AS next_step,
       coalesce(j.segment_key, o.segment_key) AS next_segment
FROM groups AS g
LEFT JOIN calls AS m  -- a trace id is a trace's, of one run, phase and rank
  ON m.trace_id = g.trace_id AND m.event_index = g.cut_event
LEFT JOIN calls AS l  -- the last rank's call, of a matched instance only
  ON l.run = m.run AND l.phase = m.phase AND l.capture_group = m.capture_group
 AND l.process_group = m.process_group AND l.seq = m.seq
 AND l.rank = CASE WHEN m.matched THEN m.last_rank END
LEFT JOIN segments AS j
  ON j.trace_id = l.trace_id AND j.segment_key = l.event_index
LEFT JOIN segments AS o
  ON o.trace_id = g.trace_id AND o.segment_key = g.cut_event
"""

# The calls of a run whose phases have one rank each, in place of `_collective_matches`: there
# every cut turns to the rank's own segment into its kernel, matched or not (the last rank
# is the rank itself, its arrival the kernel's start: no wait), so the job's path needs no
# call's figures, and the helper (~0.2-0.5 s of planning and work over _collective_kernels)
# is not asked.
NO_CALLS = """
SELECT CAST(NULL AS VARCHAR) AS run, CAST(NULL AS VARCHAR) AS phase,
       CAST(NULL AS INTEGER) AS rank, CAST(NULL AS VARCHAR) AS trace_id,
       CAST(NULL AS BIGINT) AS event_index, CAST(NULL AS BIGINT) AS capture_group,
       CAST(NULL AS VARCHAR) AS process_group, CAST(NULL AS BIGINT) AS seq,
       CAST(NULL AS BOOLEAN) AS matched, CAST(NULL AS INTEGER) AS last_rank,
       CAST(NULL AS BIGINT) AS last_start_ns
LIMIT 0
"""
# Whether some run and phase on the connection has several ranks' paths.
SEVERAL_RANKS = """
SELECT count(*) FROM (
  SELECT run, phase FROM critical_path_edges GROUP BY ALL HAVING count(DISTINCT rank) > 1
)
"""

# Whether the connection has the helper _collective_matches as a view: its rows computed once
# on it (see marts._compute_once), which GROUPS then reads rather than the helper's SELECT as a
# subquery (~0.03 s of planning and work for 8 ranks, what collective_waits costs again).
MATCHES_DEFINED = "SELECT count(*) FROM duckdb_views() WHERE view_name = '_collective_matches'"

# The chosen walks' stored rows: each visited group's rows after its cut, placed from its
# offset on the job's path (the visits as parallel lists: $1 run, ... $9 offset).
VISITED_ROWS = """
WITH visits AS (
  SELECT unnest($1) AS run, unnest($2) AS phase, unnest($3) AS rank, unnest($4) AS trace_id,
         unnest($5) AS step_key, unnest($6) AS segment_key, unnest($7) AS cut,
         unnest($8) AS step, unnest($9) AS place
)
SELECT v.run, v.phase, v.step, v.place + e.seq - v.cut - 1 AS seq, e.rank, e.bound_by, e.ns,
       e.start_ns, e.end_ns, e.name, e.event_table, e.event_index AS event_id
FROM critical_path_edges AS e
JOIN visits AS v
  ON e.run = v.run AND e.phase = v.phase AND e.rank = v.rank AND e.trace_id = v.trace_id
 AND coalesce(e.step, '') = v.step_key AND coalesce(e.segment_of, -1) = v.segment_key
 AND e.seq > v.cut
"""

# The view's columns and types (rank: the partition's INTEGER; the rest as the stored edges'
# columns they come from, seq a BIGINT).
SCHEMA = pa.schema([("run", pa.string()), ("phase", pa.string()), ("step", pa.string()),
                    ("seq", pa.int64()), ("rank", pa.int32()), ("bound_by", pa.string()),
                    ("ns", pa.int64()), ("start_ns", pa.int64()), ("end_ns", pa.int64()),
                    ("name", pa.string()), ("event_table", pa.string()),
                    ("event_id", pa.int64())])
# The rows as they are handed on: text as dictionaries (a path's rows repeat a few kernel
# names, phases and bounds), the stored rows fetched BATCH_ROWS at a time, each encoded and
# copied out of the batch DuckDB handed over (a column kept as it came would hold that whole
# batch, its text too). Fetched whole, then encoded at the mart's commit, the 254 MB trace's
# 292,827 rows were held as DuckDB's result, as plain Arrow (38 MB) and encoded (20 MB): the
# refresh's peak of memory, 50-55 MB over what the questions before left.
ENCODED = pa.schema([field.with_type(pa.dictionary(pa.int32(), field.type))
                     if pa.types.is_string(field.type) else field for field in SCHEMA])
BATCH_ROWS = 8192


class _Group:
    """A stored path or segment: its rows after the cut, the kernel at the cut kept (the
    transfer after the last arrival, and the wait before it when the walk stays on the
    rank), and the group the walk goes on along (None: it ends here)."""

    __slots__ = ("key", "cut", "after_ns", "after_rows", "kept", "next")

    def __init__(self, row):
        self.key = tuple(row[name] for name in
                         ("run", "phase", "rank", "trace_id", "step_key", "segment_key"))
        self.cut, self.after_ns, self.after_rows = row["cut"], row["after_ns"], row["after_rows"]
        self.kept = []
        self.next = None
        if self.cut is None:
            return
        start, end, last = row["cut_start"], row["cut_end"], row["last_start_ns"]
        matched = row["matched"]
        event = (row["cut_name"], row["cut_table"], row["cut_event"])
        if matched and not row["jumps"] and last is not None and last > start:
            self.kept.append(("gpu_communication_wait", start, min(last, end), event))
        transfer = min(max(start, last), end) if matched and last is not None else start
        self.kept.append(("gpu_communication_bound", transfer, end, event))
        if row["next_segment"] is not None:
            self.next = (row["run"], row["phase"], row["next_rank"], row["next_trace"],
                         row["next_step"], row["next_segment"])

    @property
    def own_ns(self):
        return self.after_ns + sum(end - start for _, start, end, _ in self.kept)


def job_path_rows(connection, live=()):
    """The `critical_path` view's rows of the runs on `connection` (an Arrow table of
    ENCODED columns: its text as dictionaries; its seq orders each step's path, the rows are
    in no order, as the view's); `live`: the live helpers of its library (see
    `library.live_helpers`)."""
    matches = NO_CALLS
    if connection.sql(SEVERAL_RANKS).fetchall()[0][0]:
        matches = ("SELECT * FROM _collective_matches"
                   if connection.sql(MATCHES_DEFINED).fetchall()[0][0]
                   else helper_select("_collective_matches", live))
    found = connection.sql(GROUPS.format(matches=matches)).to_arrow_table().to_pylist()
    # the groups' working memory (DuckDB keeps freed pages, see engine_memory), not under
    # the rows' question, the refresh's largest after the 254 MB trace (292,827 rows)
    give_back_freed_memory()
    groups = {}
    for row in found:
        group = _Group(row)
        groups[group.key] = group
    lengths = _lengths(groups)
    candidates = {}  # (run, phase, step): {origin: [length, its walks' first groups]}
    for key in groups:
        run, phase, rank, _, step_key, segment_key = key
        if segment_key == -1:
            walk = candidates.setdefault((run, phase, step_key or None), {}).setdefault(
                rank, [0, []])
            walk[0] += lengths[key]
            walk[1].append(key)
    chosen = {where: min(origins.items(), key=lambda item: (-item[1][0], item[0]))[1][1]
              for where, origins in candidates.items()}
    return _rows(connection, groups, chosen)


def _lengths(groups):
    """{group key: the length of the walk from it on}: its own rows and kept kernel, then
    the group it turns to; each computed once. A walk that comes back to a group it has been
    through (clocks that disagree across ranks) stops there."""
    lengths = {}
    for key in groups:
        chain, seen = [], set()
        while key is not None and key not in lengths and key in groups and key not in seen:
            seen.add(key)
            chain.append(key)
            key = groups[key].next
        after = lengths.get(key, 0) if key not in seen else 0
        for visited in reversed(chain):
            after += groups[visited].own_ns
            lengths[visited] = after
    return lengths


def _walk(groups, key):
    """The groups a walk from `key` goes through, in walk order (back in time)."""
    visited, seen = [], set()
    while key is not None and key in groups and key not in seen:
        seen.add(key)
        visited.append(groups[key])
        key = groups[key].next
    return visited


def _rows(connection, groups, chosen):
    """The rows of the chosen walks: each walk's groups from the deepest on, each its kept
    kernel then its rows after the cut, numbered along the path."""
    visits = {name: [] for name in ("run", "phase", "rank", "trace_id", "step_key",
                                    "segment_key", "cut", "step", "place")}
    kept = {name: [] for name in SCHEMA.names}
    for (run, phase, step), starts in chosen.items():
        place = 0
        walked = [group for key in starts for group in reversed(_walk(groups, key))]
        for group in walked:
            for bound_by, start, end, (name, table, event) in group.kept:
                for column, value in zip(SCHEMA.names, (
                        run, phase, step, place, group.key[2], bound_by, end - start, start,
                        end, name, table, event)):
                    kept[column].append(value)
                place += 1
            for column, value in zip(visits, (*group.key, -1 if group.cut is None else
                                              group.cut, step, place)):
                visits[column].append(value)
            place += group.after_rows
    if not visits["run"]:
        return ENCODED.empty_table()
    stored = connection.sql(VISITED_ROWS, params=list(visits.values())).to_arrow_reader(
        BATCH_ROWS)
    memory = pa.default_cpu_memory_manager()
    return pa.Table.from_batches([*(batch.cast(ENCODED).copy_to(memory) for batch in stored),
                                  *pa.table(kept, schema=ENCODED).to_batches()], ENCODED)
