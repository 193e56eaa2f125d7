-- Every ancestor of the members of the cpu_op layer that launched GPU activity and of every
-- nn.Module frame: one row per (event, enclosing member), for the views that add GPU time
-- up the tree (total time of an op, a module's path).
--
-- The ancestor at level k of an event at depth d (k < d) is the last member of level k
-- started before it on its thread (_host_layers order); in a thread whose events nest, that
-- is the one enclosing it. Built once per trace at ingest (`call_ancestors`,
-- ingest/call_tree.py); a warehouse created before call_ancestors existed replaces this view
-- by sql/live/_host_ancestors.sql, which computes the same rows at query time. The ops of a
-- capture trace that replayed kernels are attributed to (see op_kernels) are known only once
-- the run holds the replay: their ancestors are found here, in the capture traces only.
--
-- Reads: call_ancestors, _host_layers, graph_replay_kernels
--
-- Columns:
--   layer                 cpu_op or module
--   run, phase, rank      partition
--   trace_id              the trace
--   event_index           the event (a cpu_op or an nn.Module python_function)
--   level                 the ancestor's depth (0: outermost)
--   ancestor_event_index  the ancestor member
CREATE OR REPLACE VIEW _host_ancestors AS
WITH captured AS (
  -- the ops of a capture trace that replayed kernels are attributed to (op_kernels' rule:
  -- the op enclosing the captured launch): known only once the run holds the replay, so
  -- not at ingest. Read from the graph_replay_kernels mart, which is empty where no run
  -- holds a capture, so that those runs pay nothing for it.
  SELECT DISTINCT g.run, g.capture_phase AS phase, g.rank, g.capture_trace_id AS trace_id,
         p.parent_event_index AS event_index
  FROM graph_replay_kernels AS g
  JOIN _host_layers AS p
    ON p.run = g.run AND p.phase = g.capture_phase AND p.rank = g.rank
   AND p.trace_id = g.capture_trace_id AND p.event_index = g.captured_launch_event_index
  WHERE g.captured_launch_event_index IS NOT NULL AND p.source = 'runtime'
    AND p.layer = 'cpu_op' AND p.parent_event_index IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM call_ancestors AS c
                    WHERE c.layer = 'cpu_op' AND c.run = g.run AND c.phase = g.capture_phase
                      AND c.rank = g.rank AND c.trace_id = g.capture_trace_id
                      AND c.event_index = p.parent_event_index)
),
members AS (
  SELECT l.run, l.phase, l.rank, l.trace_id, l.event_index, l.pid, l.tid, l.pos, l.depth,
         l.dur_ns
  FROM _host_layers AS l
  WHERE l.member AND l.layer = 'cpu_op'
    AND l.trace_id IN (SELECT trace_id FROM captured)
),
levels AS (
  SELECT m.run, m.phase, m.rank, m.trace_id, m.pid, m.tid, m.pos, m.depth, m.event_index,
         v.level
  FROM members AS m
  JOIN captured AS c
    ON c.run = m.run AND c.phase = m.phase AND c.rank = m.rank AND c.trace_id = m.trace_id
   AND c.event_index = m.event_index
  JOIN (SELECT DISTINCT depth AS level FROM members) AS v ON v.level < m.depth
),
lookups AS (
  SELECT run, phase, rank, trace_id, pid, tid, pos, depth AS level, event_index AS opener,
         CAST(NULL AS BIGINT) AS asker
  FROM members
  WHERE coalesce(dur_ns, 0) > 0
  UNION ALL
  SELECT run, phase, rank, trace_id, pid, tid, pos, level, CAST(NULL AS BIGINT) AS opener,
         event_index AS asker
  FROM levels
),
found AS (
  SELECT run, phase, rank, trace_id, asker, level,
         last_value(opener IGNORE NULLS) OVER (
           PARTITION BY run, phase, rank, trace_id, pid, tid, level
           ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS ancestor
  FROM lookups
)
SELECT layer, run, phase, rank, trace_id, event_index, level, ancestor_event_index
FROM call_ancestors
UNION ALL
SELECT 'cpu_op' AS layer, run, phase, rank, trace_id, asker AS event_index, level,
       ancestor AS ancestor_event_index
FROM found
WHERE asker IS NOT NULL AND ancestor IS NOT NULL;
