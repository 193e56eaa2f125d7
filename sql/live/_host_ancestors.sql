-- _host_ancestors computed from the call tree and op_kernels, where the rows built at ingest
-- (call_ancestors) do not exist: the warehouse was created before call_ancestors existed.
--
-- Every ancestor of the members of the cpu_op layer that launched GPU activity and of every
-- nn.Module frame: one row per (event, enclosing member), for the views that add GPU time
-- up the tree (total time of an op, a module's path).
--
-- The ancestor at level k of an event at depth d (k < d) is the last member of level k
-- started before it on its thread (_host_layers order); in a thread whose events nest, that
-- is the one enclosing it. One ordered pass per (thread, level), no recursion.
--
-- Reads: _host_layers, op_kernels
--
-- Columns:
--   layer                 cpu_op or module
--   run, phase, rank      partition
--   trace_id              the trace
--   event_index           the event (a cpu_op or an nn.Module python_function)
--   level                 the ancestor's depth (0: outermost)
--   ancestor_event_index  the ancestor member
CREATE OR REPLACE VIEW _host_ancestors AS
WITH members AS (
  SELECT layer, run, phase, rank, trace_id, event_index, pid, tid, pos, depth, dur_ns
  FROM _host_layers
  WHERE member AND layer IN ('cpu_op', 'module')
),
launchers AS (
  -- a replayed kernel's op is in the capture's trace (op_phase, op_trace_id)
  SELECT DISTINCT run, op_phase AS phase, rank, op_trace_id AS trace_id, op_event_index
  FROM op_kernels
  WHERE op_event_index IS NOT NULL
),
askers AS (
  SELECT m.*
  FROM members AS m
  LEFT JOIN launchers AS l
    ON m.layer = 'cpu_op' AND l.run = m.run AND l.phase = m.phase AND l.rank = m.rank
   AND l.trace_id = m.trace_id AND l.op_event_index = m.event_index
  WHERE m.depth > 0 AND (m.layer = 'module' OR l.op_event_index IS NOT NULL)
),
levels AS (
  SELECT DISTINCT layer, depth AS level FROM members
),
lookups AS (
  SELECT layer, run, phase, rank, trace_id, pid, tid, pos, depth AS level,
         event_index AS opener, CAST(NULL AS BIGINT) AS asker
  FROM members
  WHERE coalesce(dur_ns, 0) > 0
  UNION ALL
  SELECT a.layer, a.run, a.phase, a.rank, a.trace_id, a.pid, a.tid, a.pos, v.level,
         CAST(NULL AS BIGINT) AS opener, a.event_index AS asker
  FROM askers AS a
  JOIN levels AS v ON v.layer = a.layer AND v.level < a.depth
),
found AS (
  SELECT layer, run, phase, rank, trace_id, asker, level,
         last_value(opener IGNORE NULLS) OVER (
           PARTITION BY layer, run, phase, rank, trace_id, pid, tid, level
           ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ancestor
  FROM lookups
)
SELECT layer, run, phase, rank, trace_id, asker AS event_index, level,
       ancestor AS ancestor_event_index
FROM found
WHERE asker IS NOT NULL AND ancestor IS NOT NULL;
