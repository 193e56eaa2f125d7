-- _host_layers computed from the host events, where the rows built at ingest (call_tree)
-- do not exist: the warehouse was created before call_tree existed.
--
-- The host call tree of each trace and thread, in four layers: every event (`all`), and the
-- cpu_op, nn.Module and user_annotation trees that the GPU attribution views read.
--
-- Per (run, phase, rank, trace_id, pid, tid) and layer, events are ordered by start, then
-- longer first, then event_index (equal start: the longer one is the parent; equal start and
-- duration: the earlier event in the file). An event's depth is the number of events open at
-- its start: started before it in that order and not yet ended, an event ending exactly where
-- another starts being closed by then (so a zero-duration event at a parent's end is not its
-- child); zero-duration events never open. Its parent is the last-started event one level
-- up. When a thread's events nest (every pair disjoint or one inside the other), that is the
-- innermost event enclosing it; an event that ends after that parent, or starts once it has
-- ended, is a partial overlap and flagged (real traces: a few python_function frames around
-- context managers). Computed with ordered window passes only (no recursion, no range join);
-- correlation ids and event indices are never compared across trace_id.
--
-- Layers: `all` holds every cpu_ops and runtime event, each a member. The others hold their
-- members (category cpu_op; python_function events named `nn.Module: ...`; category
-- user_annotation) and every runtime event as a non-member: a non-member is placed in the
-- tree (depth, parent) but never opens, so its parent is the innermost member enclosing it.
-- Instant events (`instants`: memory events, markers) are non-members of those three layers
-- too, so the op, module and annotation around an instant are its parents there. An event
-- without a duration counts as zero duration.
--
-- Reads: cpu_ops, runtime, instants
--
-- Columns:
--   layer               all, cpu_op, module or annotation
--   run, phase, rank    partition
--   trace_id            the trace
--   event_index         the event, in cpu_ops, runtime or instants (unique per trace)
--   source              cpu_ops, runtime or instants: the table holding the event
--   cat                 its category
--   name                its name
--   pid, tid            its process and thread
--   ts_ns               start, ns
--   dur_ns              duration, ns (NULL when the event has none)
--   member              true when the event belongs to the layer (a possible parent)
--   pos                 1-based position in the thread's start order within the layer
--   depth               members open at its start (0: top level)
--   parent_event_index  the member one level up (NULL at depth 0)
--   parent_end_ns       that parent's end, ns
--   top_event_index     the outermost enclosing member, the event itself when it is a
--                       member at depth 0 (NULL for a non-member at depth 0)
--   partial_overlap     true when the event ends after its parent or starts once it ended
CREATE OR REPLACE VIEW _host_layers AS
WITH host AS (
  SELECT run, phase, rank, trace_id, event_index, 'cpu_ops' AS source, category AS cat, name,
         pid, tid, ts_ns, dur_ns
  FROM cpu_ops
  UNION ALL
  SELECT run, phase, rank, trace_id, event_index, 'runtime' AS source, category AS cat, name,
         pid, tid, ts_ns, dur_ns
  FROM runtime
),
points AS (
  SELECT run, phase, rank, trace_id, event_index, 'instants' AS source, category AS cat,
         name, pid, tid, ts_ns, CAST(NULL AS BIGINT) AS dur_ns
  FROM instants
),
layered AS (
  SELECT 'all' AS layer, h.*, true AS member FROM host AS h
  UNION ALL
  SELECT 'cpu_op' AS layer, h.*, source = 'cpu_ops' AS member
  FROM host AS h WHERE source = 'runtime' OR cat = 'cpu_op'
  UNION ALL
  SELECT 'module' AS layer, h.*, source = 'cpu_ops' AS member
  FROM host AS h
  WHERE source = 'runtime' OR (cat = 'python_function' AND name LIKE 'nn.Module: %')
  UNION ALL
  SELECT 'annotation' AS layer, h.*, source = 'cpu_ops' AS member
  FROM host AS h WHERE source = 'runtime' OR cat = 'user_annotation'
  UNION ALL
  SELECT layer, p.*, false AS member
  FROM points AS p, (SELECT 'cpu_op' AS layer UNION ALL SELECT 'module'
                     UNION ALL SELECT 'annotation') AS l
),
spans AS (
  SELECT *, greatest(coalesce(dur_ns, 0), 0) AS span_ns,
         member AND coalesce(dur_ns, 0) > 0 AS opens
  FROM layered
),
markers AS (
  SELECT layer, run, phase, rank, trace_id, pid, tid, event_index, source, cat, name, ts_ns,
         dur_ns, member, opens, span_ns, ts_ns AS at_ns, 1 AS is_start
  FROM spans
  UNION ALL
  SELECT layer, run, phase, rank, trace_id, pid, tid, event_index, source, cat, name, ts_ns,
         dur_ns, member, opens, span_ns, ts_ns + span_ns AS at_ns, 0 AS is_start
  FROM spans WHERE opens
),
counted AS (
  SELECT *,
         CAST(coalesce(sum(CASE WHEN is_start = 0 THEN -1 WHEN opens THEN 1 ELSE 0 END) OVER (
           PARTITION BY layer, run, phase, rank, trace_id, pid, tid
           ORDER BY at_ns, is_start, span_ns DESC, event_index
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS BIGINT) AS depth,
         CAST(sum(is_start) OVER (
           PARTITION BY layer, run, phase, rank, trace_id, pid, tid
           ORDER BY at_ns, is_start, span_ns DESC, event_index
           ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT) AS pos
  FROM markers
),
starts AS (
  SELECT * FROM counted WHERE is_start = 1
),
levels AS (
  SELECT layer, run, phase, rank, trace_id, pid, tid, pos, depth AS level, false AS asks,
         event_index AS opener_index, ts_ns + span_ns AS opener_end_ns
  FROM starts WHERE opens
  UNION ALL
  SELECT layer, run, phase, rank, trace_id, pid, tid, pos, depth - 1 AS level, true AS asks,
         NULL AS opener_index, NULL AS opener_end_ns
  FROM starts WHERE depth > 0
),
found AS (
  SELECT layer, run, phase, rank, trace_id, pid, tid, pos, asks,
         last_value(opener_index IGNORE NULLS) OVER (
           PARTITION BY layer, run, phase, rank, trace_id, pid, tid, level
           ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
           AS parent_event_index,
         last_value(opener_end_ns IGNORE NULLS) OVER (
           PARTITION BY layer, run, phase, rank, trace_id, pid, tid, level
           ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS parent_end_ns
  FROM levels
),
tops AS (
  SELECT *,
         last_value(CASE WHEN depth = 0 AND member THEN event_index END IGNORE NULLS) OVER (
           PARTITION BY layer, run, phase, rank, trace_id, pid, tid
           ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS last_top
  FROM starts
)
SELECT t.layer, t.run, t.phase, t.rank, t.trace_id, t.event_index, t.source, t.cat, t.name,
       t.pid, t.tid, t.ts_ns, t.dur_ns, t.member, t.pos, t.depth, f.parent_event_index,
       f.parent_end_ns,
       CASE WHEN t.depth > 0 THEN t.last_top WHEN t.member THEN t.event_index END
         AS top_event_index,
       coalesce(f.parent_end_ns < t.ts_ns + t.span_ns OR f.parent_end_ns <= t.ts_ns, false)
         AS partial_overlap
FROM tops AS t
LEFT JOIN found AS f
  ON f.asks AND f.layer = t.layer AND f.run = t.run AND f.phase = t.phase AND f.rank = t.rank
 AND f.trace_id = t.trace_id AND coalesce(f.pid, '') = coalesce(t.pid, '')
 AND coalesce(f.tid, '') = coalesce(t.tid, '') AND f.pos = t.pos;
