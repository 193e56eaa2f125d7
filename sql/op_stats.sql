-- Which operators are responsible for the GPU time: one row per run, phase, rank and cpu_op
-- name, with the host time, the GPU time each op launched itself (self) and with everything
-- it encloses (total), and the backward time of the ops whose autograd nodes ran backward.
--
-- Self and total follow op_calls (an op's own GPU activity is what op_kernels attributes
-- to it; total adds what the ops it encloses launched), summed over the calls: a call nested
-- in another of the same name counts in both totals, as in torch.profiler's key_averages.
-- Busy times are per-call unions, summed over calls (gpu_self_busy_ns is TraceLens's
-- "direct kernel time"). Communication kernels are kept and flagged (gpu_self_comm_ns,
-- communication). GPU activity no op launched is in op_kernels (link runtime_only or
-- unlaunched), not here: over a rank, gpu_self_ns of all ops plus that activity is its
-- whole GPU activity time. host_self_ns is the op's CPU time less that of the events it
-- directly encloses (_host_tree: ops, python frames, runtime calls). The backward columns
-- add up the backward calls linked to this op as their forward op (_backward_links, as in
-- op_backward).
--
-- Reads: op_calls, _host_tree, _backward_links, rank_gpu_time
--
-- Columns:
--   run, phase, rank             partition
--   name                         the op's name (aten::mm, autograd::engine::evaluate_function:
--                                AddmmBackward0, ...)
--   calls                        its calls
--   gpu_calls                    calls that launched GPU activity themselves
--   host_ns                      sum of the calls' CPU durations, ns
--   host_self_ns                 host_ns less the CPU time of the events the calls directly
--                                enclose, ns
--   gpu_kernels                  GPU activities the calls launched themselves
--   gpu_self_ns                  sum of those activities' durations, ns
--   gpu_self_busy_ns             per call the union of their intervals, summed, ns
--   gpu_total_ns                 gpu_self_ns of the calls and all the ops they enclose, ns
--   gpu_total_busy_ns            per call the union of those intervals, summed, ns
--   gpu_self_comm_ns             the part of gpu_self_ns in communication kernels, ns
--   communication                true when the op launched communication kernels
--   gpu_self_share               gpu_self_busy_ns / the rank's GPU busy time (DOUBLE)
--   gpu_total_share              gpu_total_busy_ns / the rank's GPU busy time (DOUBLE)
--   backward_calls               backward calls linked to calls of this op
--   backward_gpu_total_ns        their gpu_total_ns summed, ns
--   backward_gpu_total_busy_ns   their gpu_total_busy_ns summed, ns
CREATE OR REPLACE VIEW op_stats AS
WITH children AS (
  SELECT run, phase, rank, trace_id, parent_event_index AS event_index,
         sum(coalesce(dur_ns, 0)) AS child_ns
  FROM _host_tree
  WHERE parent_event_index IS NOT NULL
  GROUP BY run, phase, rank, trace_id, parent_event_index
),
calls AS (
  SELECT o.*, coalesce(c.child_ns, 0) AS child_ns
  FROM op_calls AS o
  LEFT JOIN children AS c
    ON c.run = o.run AND c.phase = o.phase AND c.rank = o.rank AND c.trace_id = o.trace_id
   AND c.event_index = o.event_index
),
per_name AS (
  SELECT run, phase, rank, name, count(*) AS calls,
         count(CASE WHEN gpu_kernels > 0 THEN 1 END) AS gpu_calls,
         CAST(sum(coalesce(dur_ns, 0)) AS BIGINT) AS host_ns,
         CAST(sum(coalesce(dur_ns, 0) - child_ns) AS BIGINT) AS host_self_ns,
         CAST(sum(gpu_kernels) AS BIGINT) AS gpu_kernels,
         CAST(sum(gpu_self_ns) AS BIGINT) AS gpu_self_ns,
         CAST(sum(gpu_self_busy_ns) AS BIGINT) AS gpu_self_busy_ns,
         CAST(sum(gpu_total_ns) AS BIGINT) AS gpu_total_ns,
         CAST(sum(gpu_total_busy_ns) AS BIGINT) AS gpu_total_busy_ns,
         CAST(sum(gpu_self_comm_ns) AS BIGINT) AS gpu_self_comm_ns
  FROM calls
  GROUP BY run, phase, rank, name
),
backward AS (
  SELECT b.run, b.phase, b.rank, b.forward_name AS name, count(*) AS backward_calls,
         CAST(sum(c.gpu_total_ns) AS BIGINT) AS backward_gpu_total_ns,
         CAST(sum(c.gpu_total_busy_ns) AS BIGINT) AS backward_gpu_total_busy_ns
  FROM _backward_links AS b
  JOIN calls AS c
    ON c.run = b.run AND c.phase = b.phase AND c.rank = b.rank AND c.trace_id = b.trace_id
   AND c.event_index = b.event_index
  WHERE b.forward_name IS NOT NULL
  GROUP BY b.run, b.phase, b.rank, b.forward_name
)
SELECT p.run, p.phase, p.rank, p.name, p.calls, p.gpu_calls, p.host_ns, p.host_self_ns,
       p.gpu_kernels, p.gpu_self_ns, p.gpu_self_busy_ns, p.gpu_total_ns,
       p.gpu_total_busy_ns, p.gpu_self_comm_ns, p.gpu_self_comm_ns > 0 AS communication,
       CASE WHEN g.busy_ns > 0 THEN CAST(p.gpu_self_busy_ns AS DOUBLE) / g.busy_ns END
         AS gpu_self_share,
       CASE WHEN g.busy_ns > 0 THEN CAST(p.gpu_total_busy_ns AS DOUBLE) / g.busy_ns END
         AS gpu_total_share,
       coalesce(b.backward_calls, 0) AS backward_calls,
       coalesce(b.backward_gpu_total_ns, 0) AS backward_gpu_total_ns,
       coalesce(b.backward_gpu_total_busy_ns, 0) AS backward_gpu_total_busy_ns
FROM per_name AS p
LEFT JOIN rank_gpu_time AS g
  ON g.run = p.run AND g.phase = p.phase AND g.rank = p.rank
LEFT JOIN backward AS b
  ON b.run = p.run AND b.phase = p.phase AND b.rank = p.rank AND b.name = p.name;
