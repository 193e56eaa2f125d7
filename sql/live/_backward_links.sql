-- _backward_links computed from cpu_ops and flows, where the rows built at ingest
-- (backward_links) do not exist: the warehouse was created before backward_links existed.
--
-- Each backward call (`autograd::engine::evaluate_function: XBackward0`) linked to the
-- forward op that made its autograd node: the links op_backward and op_stats read.
--
-- Linked by a `fwdbwd` flow of the same trace when one ends (ph f, or a step t) on the
-- backward call's thread within its span: the forward op is the cpu_op where the flow starts
-- (same thread and start; the longest there, then the earliest in the file). Else by
-- `Sequence number`: the cpu_op of the same trace with the call's sequence number that
-- started before it and is neither a backward call nor an autograd node (`...Backward...`),
-- the last to start (then the shortest: the op that made the node runs innermost, and later
-- ops take the next number). Calls with neither keep NULL forward columns.
--
-- Reads: cpu_ops, flows
--
-- Columns:
--   run, phase, rank       partition
--   trace_id               the trace
--   event_index            the backward call's event in cpu_ops
--   name                   its name
--   node                   the autograd node: the name without
--                          `autograd::engine::evaluate_function: `
--   sequence_number        its autograd sequence number
--   forward_event_index    the forward op's event in cpu_ops (NULL: not linked)
--   forward_name           its name
--   link                   fwdbwd, sequence_number or NULL
CREATE OR REPLACE VIEW _backward_links AS
WITH calls AS (
  SELECT run, phase, rank, trace_id, event_index, name, pid, tid, ts_ns,
         ts_ns + coalesce(dur_ns, 0) AS end_ns, sequence_number
  FROM cpu_ops
  WHERE category = 'cpu_op' AND name LIKE 'autograd::engine::evaluate_function: %'
),
flow_ends AS (
  SELECT run, phase, rank, trace_id, id, pid, tid, ts_ns
  FROM flows WHERE category = 'fwdbwd' AND ph IN ('f', 't')
),
flow_starts AS (
  SELECT s.run, s.phase, s.rank, s.trace_id, s.id, o.event_index AS forward_event_index,
         row_number() OVER (PARTITION BY s.run, s.phase, s.rank, s.trace_id, s.id
                            ORDER BY o.dur_ns DESC, o.event_index) AS nth
  FROM flows AS s
  JOIN cpu_ops AS o
    ON o.run = s.run AND o.phase = s.phase AND o.rank = s.rank AND o.trace_id = s.trace_id
   AND o.pid = s.pid AND o.tid = s.tid AND o.ts_ns = s.ts_ns AND o.category = 'cpu_op'
  WHERE s.category = 'fwdbwd' AND s.ph = 's'
),
by_flow AS (
  SELECT c.run, c.phase, c.rank, c.trace_id, c.event_index,
         min(f.forward_event_index) AS forward_event_index
  FROM calls AS c
  JOIN flow_ends AS e
    ON e.run = c.run AND e.phase = c.phase AND e.rank = c.rank AND e.trace_id = c.trace_id
   AND e.pid = c.pid AND e.tid = c.tid AND e.ts_ns >= c.ts_ns AND e.ts_ns < c.end_ns
  JOIN flow_starts AS f
    ON f.run = e.run AND f.phase = e.phase AND f.rank = e.rank AND f.trace_id = e.trace_id
   AND f.id = e.id AND f.nth = 1
  GROUP BY c.run, c.phase, c.rank, c.trace_id, c.event_index
),
by_sequence AS (
  SELECT c.run, c.phase, c.rank, c.trace_id, c.event_index,
         o.event_index AS forward_event_index,
         row_number() OVER (PARTITION BY c.run, c.phase, c.rank, c.trace_id, c.event_index
                            ORDER BY o.ts_ns DESC, o.dur_ns, o.event_index DESC) AS nth
  FROM calls AS c
  JOIN cpu_ops AS o
    ON o.run = c.run AND o.phase = c.phase AND o.rank = c.rank AND o.trace_id = c.trace_id
   AND o.sequence_number = c.sequence_number AND o.ts_ns < c.ts_ns
  WHERE o.category = 'cpu_op'
    AND o.name NOT LIKE 'autograd::engine::evaluate_function: %'
    AND o.name NOT LIKE '%Backward%'
)
SELECT c.run, c.phase, c.rank, c.trace_id, c.event_index, c.name,
       substr(c.name, 38) AS node, c.sequence_number,
       coalesce(f.forward_event_index, s.forward_event_index) AS forward_event_index,
       o.name AS forward_name,
       CASE WHEN f.forward_event_index IS NOT NULL THEN 'fwdbwd'
            WHEN s.forward_event_index IS NOT NULL THEN 'sequence_number' END AS link
FROM calls AS c
LEFT JOIN by_flow AS f
  ON f.run = c.run AND f.phase = c.phase AND f.rank = c.rank AND f.trace_id = c.trace_id
 AND f.event_index = c.event_index
LEFT JOIN by_sequence AS s
  ON s.run = c.run AND s.phase = c.phase AND s.rank = c.rank AND s.trace_id = c.trace_id
 AND s.event_index = c.event_index AND s.nth = 1
LEFT JOIN cpu_ops AS o
  ON o.run = c.run AND o.phase = c.phase AND o.rank = c.rank AND o.trace_id = c.trace_id
 AND o.event_index = coalesce(f.forward_event_index, s.forward_event_index);
