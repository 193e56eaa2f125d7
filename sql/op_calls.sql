-- Every call of a cpu_op (category cpu_op: aten ops, autograd nodes, c10d ops, ProfilerStep
-- is a user_annotation and not one) with the GPU time it launched itself and with everything
-- it encloses.
--
-- An op's own GPU activity is the op_kernels rows attributed to it (its innermost enclosing
-- op, or the External id stand-in). Its total activity is its own and that of every cpu_op
-- it encloses on its thread (_host_ancestors, layer cpu_op). Busy times are unions of
-- [ts_ns, ts_ns + dur_ns) per call, so kernels that run at the same time on several streams
-- count once; activity without a duration counts 0.
--
-- The calls and their figures are measured once per trace at ingest (_op_call_time), so that
-- over many ranks the view is a scan per trace; the traces of _op_calls_live_traces (where a
-- replayed graph's activity is attributed through its capture, or where the stored figures
-- do not hold) are computed here from the call tree and op_kernels.
--
-- Reads: _op_call_time, _op_calls_live_traces, _host_layers, op_kernels, _host_ancestors
--
-- Columns:
--   run, phase, rank     partition
--   trace_id             the trace
--   event_index          the op's event in cpu_ops
--   name                 the op's name
--   pid, tid             its process and thread
--   ts_ns                its start, ns
--   dur_ns               its duration on the CPU, ns (NULL when it has none)
--   depth                cpu_ops of category cpu_op enclosing it
--   parent_event_index   the innermost cpu_op enclosing it (NULL at top level)
--   top_event_index      the outermost cpu_op enclosing it (itself at top level)
--   partial_overlap      true when it does not nest within its parent op
--   gpu_kernels          GPU activities attributed to it
--   gpu_self_ns          sum of their durations, ns
--   gpu_self_comm_ns     the part of gpu_self_ns in communication kernels (kernel rules), ns
--   gpu_self_busy_ns     length of the union of their intervals, ns
--   gpu_total_ns         sum of the durations of its own and its descendants' activity, ns
--   gpu_total_busy_ns    length of the union of those intervals, ns
CREATE OR REPLACE VIEW op_calls AS
WITH live AS (
  SELECT run, phase, rank, trace_id FROM _op_calls_live_traces
),
stored AS (
  SELECT s.*
  FROM _op_call_time AS s
  WHERE NOT EXISTS (SELECT 1 FROM live AS t
                    WHERE t.run = s.run AND t.phase = s.phase AND t.rank = s.rank
                      AND t.trace_id = s.trace_id)
),
ops AS (
  SELECT l.run, l.phase, l.rank, l.trace_id, l.event_index, l.name, l.pid, l.tid, l.ts_ns,
         l.dur_ns, l.depth, l.parent_event_index, l.top_event_index, l.partial_overlap
  FROM _host_layers AS l
  JOIN live AS t
    ON t.run = l.run AND t.phase = l.phase AND t.rank = l.rank AND t.trace_id = l.trace_id
  WHERE l.layer = 'cpu_op' AND l.member
),
attributed AS (
  SELECT k.run, k.phase, k.rank, k.trace_id, k.op_event_index, k.ts_ns,
         coalesce(k.dur_ns, 0) AS dur_ns, k.class = 'communication' AS comm
  FROM op_kernels AS k
  JOIN live AS t
    ON t.run = k.run AND t.phase = k.phase AND t.rank = k.rank AND t.trace_id = k.trace_id
  WHERE k.op_event_index IS NOT NULL AND NOT k.via_capture  -- a capture's op: _graph_op_time
),
enclosing AS (
  SELECT run, phase, rank, trace_id, op_event_index AS holder, ts_ns, dur_ns, comm,
         true AS own
  FROM attributed
  UNION ALL
  SELECT a.run, a.phase, a.rank, a.trace_id, y.ancestor_event_index AS holder, a.ts_ns,
         a.dur_ns, a.comm, false AS own
  FROM _host_ancestors AS y
  JOIN attributed AS a
    ON a.run = y.run AND a.phase = y.phase AND a.rank = y.rank AND a.trace_id = y.trace_id
   AND a.op_event_index = y.event_index
  WHERE y.layer = 'cpu_op'
),
reached AS (
  SELECT *,
         max(CASE WHEN own THEN ts_ns + dur_ns END) OVER (
           PARTITION BY run, phase, rank, trace_id, holder, own
           ORDER BY ts_ns, dur_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
           AS own_until,
         max(ts_ns + dur_ns) OVER (
           PARTITION BY run, phase, rank, trace_id, holder
           ORDER BY ts_ns, dur_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
           AS any_until
  FROM enclosing
),
sums AS (
  SELECT run, phase, rank, trace_id, holder,
         count(CASE WHEN own THEN 1 END) AS gpu_kernels,
         CAST(sum(CASE WHEN own THEN dur_ns ELSE 0 END) AS BIGINT) AS gpu_self_ns,
         CAST(sum(CASE WHEN own AND comm THEN dur_ns ELSE 0 END) AS BIGINT)
           AS gpu_self_comm_ns,
         CAST(sum(CASE WHEN own THEN greatest(0, ts_ns + dur_ns
                  - greatest(ts_ns, coalesce(own_until, ts_ns))) ELSE 0 END) AS BIGINT)
           AS gpu_self_busy_ns,
         CAST(sum(dur_ns) AS BIGINT) AS gpu_total_ns,
         CAST(sum(greatest(0, ts_ns + dur_ns - greatest(ts_ns, coalesce(any_until, ts_ns))))
              AS BIGINT) AS gpu_total_busy_ns
  FROM reached
  GROUP BY run, phase, rank, trace_id, holder
)
SELECT o.run, o.phase, o.rank, o.trace_id, o.event_index, o.name, o.pid, o.tid, o.ts_ns,
       o.dur_ns, o.depth, o.parent_event_index, o.top_event_index, o.partial_overlap,
       coalesce(s.gpu_kernels, 0) AS gpu_kernels,
       coalesce(s.gpu_self_ns, 0) AS gpu_self_ns,
       coalesce(s.gpu_self_comm_ns, 0) AS gpu_self_comm_ns,
       coalesce(s.gpu_self_busy_ns, 0) AS gpu_self_busy_ns,
       coalesce(s.gpu_total_ns, 0) AS gpu_total_ns,
       coalesce(s.gpu_total_busy_ns, 0) AS gpu_total_busy_ns
FROM ops AS o
LEFT JOIN sums AS s
  ON s.run = o.run AND s.phase = o.phase AND s.rank = o.rank AND s.trace_id = o.trace_id
 AND s.holder = o.event_index
UNION ALL
SELECT run, phase, rank, trace_id, event_index, name, pid, tid, ts_ns, dur_ns, depth,
       parent_event_index, top_event_index, partial_overlap, gpu_kernels, gpu_self_ns,
       gpu_self_comm_ns, gpu_self_busy_ns, gpu_total_ns, gpu_total_busy_ns
FROM stored;
