-- Every call of a captured op in a graph launch that replayed its kernels: one row per graph
-- launch and captured op that launched a replayed kernel itself or encloses (in the capture)
-- an op that did, with the GPU time it launched (op_kernels' via_capture rows). Each replay
-- runs every captured op once, so a call is a (graph launch, captured op) pair. The figures
-- follow op_calls' rules: self is the op's own replayed kernels, total adds those of the
-- captured ops it encloses (_host_ancestors); busy times are unions of [ts_ns, ts_ns +
-- dur_ns) per call. _graph_op_time sums these per name; op_perf measures the modeled ones.
--
-- Reads: op_kernels, _host_ancestors, cpu_ops
--
-- Columns:
--   run, phase, rank     partition (the replay's)
--   trace_id             the replay's trace
--   launch_event_index   the graph launch (runtime event of the replay's trace)
--   op_phase             the capture trace's phase
--   op_trace_id          the capture trace
--   event_index          the captured op (cpu_ops event of the capture trace)
--   name                 its name
--   nested               true when it is within a captured op of its name (that op's
--                        total holds its time)
--   gpu_kernels          replayed GPU activities attributed to it
--   gpu_self_ns          sum of their durations, ns
--   gpu_self_comm_ns     the part of gpu_self_ns in communication kernels, ns
--   gpu_self_busy_ns     length of the union of their intervals, ns
--   gpu_total_ns         sum of the durations of its own and its descendants' replayed
--                        activity, ns
--   gpu_total_busy_ns    length of the union of those intervals, ns
CREATE OR REPLACE VIEW _graph_op_calls AS
WITH replayed AS (
  SELECT run, phase, rank, trace_id, launch_event_index, op_phase, op_trace_id,
         op_event_index, ts_ns, coalesce(dur_ns, 0) AS dur_ns,
         class = 'communication' AS comm
  FROM op_kernels
  WHERE via_capture AND op_event_index IS NOT NULL
),
chain AS (
  -- each launching op and the captured ops enclosing it, with their level (its own last)
  SELECT DISTINCT run, op_phase AS phase, rank, op_trace_id AS trace_id,
         op_event_index AS launcher, op_event_index AS holder, 9223372036854775807 AS level
  FROM replayed
  UNION ALL
  SELECT y.run, y.phase, y.rank, y.trace_id, y.event_index AS launcher,
         y.ancestor_event_index AS holder, y.level
  FROM _host_ancestors AS y
  JOIN (SELECT DISTINCT run, op_phase, rank, op_trace_id, op_event_index
        FROM replayed) AS r
    ON y.run = r.run AND y.phase = r.op_phase AND y.rank = r.rank
   AND y.trace_id = r.op_trace_id AND y.event_index = r.op_event_index
  WHERE y.layer = 'cpu_op'
),
named AS (
  SELECT c.*, o.name
  FROM chain AS c
  JOIN cpu_ops AS o
    ON o.run = c.run AND o.phase = c.phase AND o.rank = c.rank AND o.trace_id = c.trace_id
   AND o.event_index = c.holder
),
nested AS (
  -- a holder within a captured op of its name
  SELECT DISTINCT a.run, a.phase, a.rank, a.trace_id, a.holder
  FROM named AS a
  JOIN named AS b
    ON b.run = a.run AND b.phase = a.phase AND b.rank = a.rank AND b.trace_id = a.trace_id
   AND b.launcher = a.launcher AND b.level < a.level AND b.name = a.name
),
held AS (
  SELECT r.run, r.phase, r.rank, r.trace_id, r.launch_event_index, r.op_phase,
         r.op_trace_id, n.holder, n.name, n.holder = r.op_event_index AS own, r.ts_ns,
         r.dur_ns, r.comm
  FROM replayed AS r
  JOIN named AS n
    ON n.run = r.run AND n.phase = r.op_phase AND n.rank = r.rank
   AND n.trace_id = r.op_trace_id AND n.launcher = r.op_event_index
),
reached AS (
  SELECT *,
         max(CASE WHEN own THEN ts_ns + dur_ns END) OVER (
           PARTITION BY run, phase, rank, trace_id, launch_event_index, holder, own
           ORDER BY ts_ns, dur_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
           AS own_until,
         max(ts_ns + dur_ns) OVER (
           PARTITION BY run, phase, rank, trace_id, launch_event_index, holder
           ORDER BY ts_ns, dur_ns ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)
           AS any_until
  FROM held
),
calls AS (
  SELECT run, phase, rank, trace_id, launch_event_index, op_phase, op_trace_id, holder,
         name,
         count(CASE WHEN own THEN 1 END) AS gpu_kernels,
         sum(CASE WHEN own THEN dur_ns ELSE 0 END) AS gpu_self_ns,
         sum(CASE WHEN own AND comm THEN dur_ns ELSE 0 END) AS gpu_self_comm_ns,
         sum(CASE WHEN own THEN greatest(0, ts_ns + dur_ns
             - greatest(ts_ns, coalesce(own_until, ts_ns))) ELSE 0 END) AS gpu_self_busy_ns,
         sum(dur_ns) AS gpu_total_ns,
         sum(greatest(0, ts_ns + dur_ns - greatest(ts_ns, coalesce(any_until, ts_ns))))
           AS gpu_total_busy_ns
  FROM reached
  GROUP BY run, phase, rank, trace_id, launch_event_index, op_phase, op_trace_id, holder,
           name
)
SELECT c.run, c.phase, c.rank, c.trace_id, c.launch_event_index, c.op_phase, c.op_trace_id,
       c.holder AS event_index, c.name, n.holder IS NOT NULL AS nested,
       CAST(c.gpu_kernels AS BIGINT) AS gpu_kernels,
       CAST(c.gpu_self_ns AS BIGINT) AS gpu_self_ns,
       CAST(c.gpu_self_comm_ns AS BIGINT) AS gpu_self_comm_ns,
       CAST(c.gpu_self_busy_ns AS BIGINT) AS gpu_self_busy_ns,
       CAST(c.gpu_total_ns AS BIGINT) AS gpu_total_ns,
       CAST(c.gpu_total_busy_ns AS BIGINT) AS gpu_total_busy_ns
FROM calls AS c
LEFT JOIN nested AS n
  ON n.run = c.run AND n.phase = c.op_phase AND n.rank = c.rank AND n.trace_id = c.op_trace_id
 AND n.holder = c.holder;
