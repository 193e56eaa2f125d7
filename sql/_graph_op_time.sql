-- _op_time's figures of the ops whose kernels a graph launch replayed: the captured ops
-- op_kernels attributes replayed kernels to (via_capture), and the captured ops enclosing
-- them, per name in the replay's trace, for op_stats to add to the ops the trace ran itself.
--
-- A call is one captured op in one graph launch (each replay runs every captured op once),
-- counted when it or an op it encloses launched a replayed kernel. Self and total follow
-- op_calls' rules (per call the sum and the union of its own kernels; with those of the ops
-- it encloses in the capture, _host_ancestors), and a call within a captured call of its
-- name adds nothing to the name's total, as in _op_time. Its CPU time is the graph
-- launch's, which stays with what encloses the launch: host_ns and host_self_ns are 0. No
-- backward call links to it.
--
-- Reads: op_kernels, _host_ancestors, cpu_ops
--
-- Columns: those of _op_time
CREATE OR REPLACE VIEW _graph_op_time AS
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
SELECT c.run, c.phase, c.rank, c.trace_id, c.name, count(*) AS calls,
       count(CASE WHEN c.gpu_kernels > 0 THEN 1 END) AS gpu_calls,
       CAST(0 AS BIGINT) AS host_ns, CAST(0 AS BIGINT) AS host_self_ns,
       CAST(sum(c.gpu_kernels) AS BIGINT) AS gpu_kernels,
       CAST(sum(c.gpu_self_ns) AS BIGINT) AS gpu_self_ns,
       CAST(sum(c.gpu_self_busy_ns) AS BIGINT) AS gpu_self_busy_ns,
       CAST(sum(CASE WHEN n.holder IS NULL THEN c.gpu_total_ns ELSE 0 END) AS BIGINT)
         AS gpu_total_ns,
       CAST(sum(CASE WHEN n.holder IS NULL THEN c.gpu_total_busy_ns ELSE 0 END) AS BIGINT)
         AS gpu_total_busy_ns,
       CAST(sum(c.gpu_self_comm_ns) AS BIGINT) AS gpu_self_comm_ns,
       CAST(0 AS BIGINT) AS backward_calls, CAST(0 AS BIGINT) AS backward_gpu_total_ns,
       CAST(0 AS BIGINT) AS backward_gpu_total_busy_ns
FROM calls AS c
LEFT JOIN nested AS n
  ON n.run = c.run AND n.phase = c.op_phase AND n.rank = c.rank AND n.trace_id = c.op_trace_id
 AND n.holder = c.holder
GROUP BY c.run, c.phase, c.rank, c.trace_id, c.name;
