-- The job's critical path of each step over the ranks of a run and phase, one row per path
-- edge in path order: the ranks' graphs joined at each matched collective instance
-- (`_collective_matches`, as collective_instances matches them). A rank's collective cannot
-- end before the last rank arrives, so the path through a collective goes to the rank that
-- arrived last, and the time the others waited there is not on it.
-- Built from what ingest stored per rank (`critical_path_edges`): the rank's path of the step,
-- and for each communication kernel its segment, the rank's longest path into the kernel's
-- start back to the previous communication kernel on it. Each rank's path is walked back from
-- its end; at each communication kernel on it of a matched instance, the path keeps the
-- transfer (from the last arrival to the kernel's end, `gpu_communication_bound`) and goes on
-- along the segment of the last rank's call (its work up to its arrival), else along the
-- rank's own segment; each rank's walk is a candidate, and the job's path is the longest
-- (the lowest rank of a tie). Where the last rank's call has no segment (its kernel is not in
-- a step of its capture), the path stays on the rank, the wait before the last arrival on it
-- as `gpu_communication_wait`. An unmatched collective is one rank's (HTA's) kernel edge. For
-- a run of one rank the job's path is the rank's path. The ranks' clocks are taken as one.
-- The walk turns at every collective on the path it follows, not at ones off it: it is the
-- path back from the end, not a longest path over every rank's graph at once.
--
-- Reads: critical_path_edges, _collective_matches
--
-- Columns:
--   run, phase         partition
--   step               the step, NULL for traces without steps
--   seq                position of the edge on the path, from 0
--   rank               the rank the edge ran on
--   bound_by           the edge's class (see rank_critical_path), or
--                      gpu_communication_wait: in a collective, waiting for a rank whose
--                      arrival is not on the path (see above)
--   ns                 time the edge adds to the path, ns
--   start_ns, end_ns   times of the edge's two ends, ns
--   name               the event the edge is attributed to
--   event_table        its table: cpu_ops, runtime or kernels
--   event_id           its event_index in that table
CREATE OR REPLACE VIEW critical_path AS
WITH RECURSIVE
stored_edges AS (
  -- keyed for equality joins: a step or segment_of NULL as '' or -1
  SELECT *, coalesce(step, '') AS step_key, coalesce(segment_of, -1) AS segment_key
  FROM critical_path_edges
),
calls AS MATERIALIZED (
  SELECT run, phase, rank, trace_id, event_index, capture_group, process_group, seq, matched,
         last_rank, last_start_ns
  FROM _collective_matches
),
boundaries AS MATERIALIZED (
  -- each stored path or segment's last communication kernel: where the walk turns
  SELECT run, phase, rank, trace_id, step_key, segment_key, seq, start_ns, end_ns, event_index
  FROM (
    SELECT run, phase, rank, trace_id, step_key, segment_key, seq, start_ns, end_ns,
           event_index,
           row_number() OVER (PARTITION BY run, phase, rank, trace_id, step_key, segment_key
                              ORDER BY seq DESC) AS place
    FROM stored_edges
    WHERE event_table = 'kernels' AND bound_by = 'gpu_communication_bound'
  ) AS numbered
  WHERE place = 1
),
segments AS MATERIALIZED (
  -- each communication kernel's segment (of the first step, were it in two)
  SELECT run, phase, rank, trace_id, segment_key, min(step_key) AS step_key
  FROM stored_edges
  WHERE segment_of IS NOT NULL
  GROUP BY run, phase, rank, trace_id, segment_key
),
turns AS MATERIALIZED (
  -- at each boundary: the segment the walk goes on along, and how the kernel is kept
  SELECT b.run, b.phase, b.rank, b.trace_id, b.step_key, b.segment_key, b.seq AS cut,
         b.start_ns, b.end_ns, b.event_index, m.last_start_ns, j.rank IS NOT NULL AS jumps,
         coalesce(j.rank, b.rank) AS next_rank,
         coalesce(j.trace_id, b.trace_id) AS next_trace,
         coalesce(j.segment_key, o.segment_key) AS next_segment,
         coalesce(j.step_key, o.step_key) AS next_step,
         coalesce(m.matched, false) AS matched
  FROM boundaries AS b
  LEFT JOIN calls AS m
    ON m.run = b.run AND m.phase = b.phase AND m.rank = b.rank AND m.trace_id = b.trace_id
   AND m.event_index = b.event_index
  LEFT JOIN calls AS l
    ON m.matched AND l.run = m.run AND l.phase = m.phase
   AND l.capture_group = m.capture_group AND l.process_group = m.process_group
   AND l.seq = m.seq AND l.rank = m.last_rank
  LEFT JOIN segments AS j
    ON j.run = l.run AND j.phase = l.phase AND j.rank = l.rank AND j.trace_id = l.trace_id
   AND j.segment_key = l.event_index
  LEFT JOIN segments AS o
    ON o.run = b.run AND o.phase = b.phase AND o.rank = b.rank AND o.trace_id = b.trace_id
   AND o.segment_key = b.event_index
),
walk (run, phase, step, origin, depth, rank, trace_id, step_key, segment_key) AS (
  SELECT DISTINCT run, phase, step, rank, 0, rank, trace_id, step_key, segment_key
  FROM stored_edges
  WHERE segment_of IS NULL
  UNION ALL
  SELECT w.run, w.phase, w.step, w.origin, w.depth + 1, t.next_rank, t.next_trace,
         t.next_step, t.next_segment
  FROM walk AS w
  JOIN turns AS t
    ON t.run = w.run AND t.phase = w.phase AND t.rank = w.rank AND t.trace_id = w.trace_id
   AND t.step_key = w.step_key AND t.segment_key = w.segment_key
  WHERE t.next_segment IS NOT NULL AND w.depth < 1000000
),
visits AS MATERIALIZED (
  SELECT w.run, w.phase, w.step, w.origin, w.depth, w.rank, w.trace_id, w.step_key,
         w.segment_key, t.cut, t.start_ns, t.end_ns, t.event_index, t.matched, t.jumps,
         t.last_start_ns
  FROM walk AS w
  LEFT JOIN turns AS t
    ON t.run = w.run AND t.phase = w.phase AND t.rank = w.rank AND t.trace_id = w.trace_id
   AND t.step_key = w.step_key AND t.segment_key = w.segment_key
),
stored AS (
  -- the walk's stored edges: each path or segment after its boundary
  SELECT v.run, v.phase, v.step, v.origin, v.depth, 2 AS part, e.seq, e.rank, e.bound_by,
         e.ns, e.start_ns, e.end_ns, e.name, e.event_table, e.event_index
  FROM visits AS v
  JOIN stored_edges AS e
    ON e.run = v.run AND e.phase = v.phase AND e.rank = v.rank AND e.trace_id = v.trace_id
   AND e.step_key = v.step_key AND e.segment_key = v.segment_key
  WHERE e.seq > coalesce(v.cut, -1)
),
kept AS (
  -- each boundary's kernel: the transfer after the last arrival, the wait before it when the
  -- walk stays on the rank, or the whole kernel (an unmatched collective)
  SELECT v.run, v.phase, v.step, v.origin, v.depth, p.part, v.cut AS seq, v.rank,
         CASE WHEN p.part = 0 THEN 'gpu_communication_wait'
              ELSE 'gpu_communication_bound' END AS bound_by,
         CASE WHEN p.part = 0 OR NOT v.matched THEN v.start_ns
              ELSE least(greatest(v.start_ns, v.last_start_ns), v.end_ns) END AS start_ns,
         CASE WHEN p.part = 0 THEN least(v.last_start_ns, v.end_ns)
              ELSE v.end_ns END AS end_ns,
         e.name, e.event_table, e.event_index
  FROM visits AS v
  JOIN stored_edges AS e
    ON e.run = v.run AND e.phase = v.phase AND e.rank = v.rank AND e.trace_id = v.trace_id
   AND e.step_key = v.step_key AND e.segment_key = v.segment_key AND e.seq = v.cut
  CROSS JOIN (SELECT 0 AS part UNION ALL SELECT 1) AS p
  WHERE p.part = 1 OR (v.matched AND NOT v.jumps AND v.last_start_ns > v.start_ns)
),
edges AS MATERIALIZED (
  SELECT run, phase, step, origin, depth, part, seq, rank, bound_by, ns, start_ns, end_ns,
         name, event_table, event_index
  FROM stored
  UNION ALL
  SELECT run, phase, step, origin, depth, part, seq, rank, bound_by, end_ns - start_ns,
         start_ns, end_ns, name, event_table, event_index
  FROM kept
),
groups AS MATERIALIZED (
  -- each walk's parts, one per depth and part: their rows' seq run on from `first`
  SELECT run, phase, step, origin, depth, part, count(*) AS n, min(seq) AS first,
         sum(ns) AS ns
  FROM edges
  GROUP BY run, phase, step, origin, depth, part
),
chosen AS (
  SELECT run, phase, step, origin
  FROM (
    SELECT run, phase, step, origin,
           row_number() OVER (PARTITION BY run, phase, step
                              ORDER BY sum(ns) DESC, origin) AS place
    FROM groups
    GROUP BY run, phase, step, origin
  ) AS ranked
  WHERE place = 1
),
placed AS (
  -- the chosen walk's parts in path order (deepest first), each with the place of its first
  -- row: numbering the parts, not the rows, keeps the path's order without sorting its rows
  SELECT g.run, g.phase, g.step, g.origin, g.depth, g.part, g.first,
         coalesce(sum(g.n) OVER (PARTITION BY g.run, g.phase, g.step
                                 ORDER BY g.depth DESC, g.part
                                 ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)
           AS offset_rows
  FROM groups AS g
  JOIN chosen AS c
    ON c.run = g.run AND c.phase = g.phase AND c.origin = g.origin
   AND c.step IS NOT DISTINCT FROM g.step
)
SELECT e.run, e.phase, e.step, CAST(p.offset_rows + e.seq - p.first AS BIGINT) AS seq,
       e.rank, e.bound_by, e.ns, e.start_ns, e.end_ns, e.name, e.event_table,
       e.event_index AS event_id
FROM edges AS e
JOIN placed AS p
  ON p.run = e.run AND p.phase = e.phase AND p.origin = e.origin AND p.depth = e.depth
 AND p.part = e.part AND p.step IS NOT DISTINCT FROM e.step;
