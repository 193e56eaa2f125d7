-- Which operators are responsible for the GPU time: one row per run, phase, rank and cpu_op
-- name, with the host time, the GPU time each op launched itself (self) and with everything
-- it encloses (total), and the backward time of the ops whose autograd nodes ran backward.
--
-- Self and total follow op_calls (an op's own GPU activity is what op_kernels attributes
-- to it; total adds what the ops it encloses launched), summed over the calls, but a call
-- nested in a call of the same name adds nothing to the name's total (the outer call's
-- holds it, where torch.profiler's key_averages counts it twice).
-- Kernels a graph launch replayed count for the ops that captured them (_graph_op_time:
-- one call per captured op and launch, no CPU time of its own: the launch's).
-- Busy times are per-call unions, summed over calls (gpu_self_busy_ns is TraceLens's
-- "direct kernel time"). Communication kernels are kept and flagged (gpu_self_comm_ns,
-- communication). GPU activity no op launched is in op_kernels (link runtime_only or
-- unlaunched), not here: over a rank, gpu_self_ns of all ops plus that activity is its
-- whole GPU activity time. host_self_ns is the op's CPU time less that of the events it
-- directly encloses (_host_tree: ops, python frames, runtime calls). The backward columns
-- add up the backward calls linked to this op as their forward op (_backward_links, as in
-- op_backward).
--
-- A trace's figures never change after ingest: they are measured then, per name (`op_time`,
-- read through _op_time), and summed here over the rank's traces; where the stored figures
-- do not hold (other kernel rules), _op_time computes them from the call tree instead.
--
-- Reads: _op_time, _graph_op_time, rank_gpu_time
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
--                                (a call within a call of its name adds nothing: the outer
--                                one's total holds it)
--   gpu_total_busy_ns            per call the union of those intervals, summed, ns (the same
--                                calls)
--   gpu_self_comm_ns             the part of gpu_self_ns in communication kernels, ns
--   communication                true when the op launched communication kernels
--   gpu_self_share               gpu_self_busy_ns / the rank's GPU busy time (DOUBLE)
--   gpu_total_share              gpu_total_busy_ns / the rank's GPU busy time (DOUBLE)
--   backward_calls               backward calls linked to calls of this op
--   backward_gpu_total_ns        their gpu_total_ns summed, ns
--   backward_gpu_total_busy_ns   their gpu_total_busy_ns summed, ns
CREATE OR REPLACE VIEW op_stats AS
WITH per_name AS (
  SELECT run, phase, rank, name,
         CAST(sum(calls) AS BIGINT) AS calls,
         CAST(sum(gpu_calls) AS BIGINT) AS gpu_calls,
         CAST(sum(host_ns) AS BIGINT) AS host_ns,
         CAST(sum(host_self_ns) AS BIGINT) AS host_self_ns,
         CAST(sum(gpu_kernels) AS BIGINT) AS gpu_kernels,
         CAST(sum(gpu_self_ns) AS BIGINT) AS gpu_self_ns,
         CAST(sum(gpu_self_busy_ns) AS BIGINT) AS gpu_self_busy_ns,
         CAST(sum(gpu_total_ns) AS BIGINT) AS gpu_total_ns,
         CAST(sum(gpu_total_busy_ns) AS BIGINT) AS gpu_total_busy_ns,
         CAST(sum(gpu_self_comm_ns) AS BIGINT) AS gpu_self_comm_ns,
         CAST(sum(backward_calls) AS BIGINT) AS backward_calls,
         CAST(sum(backward_gpu_total_ns) AS BIGINT) AS backward_gpu_total_ns,
         CAST(sum(backward_gpu_total_busy_ns) AS BIGINT) AS backward_gpu_total_busy_ns
  FROM (SELECT * FROM _op_time UNION ALL SELECT * FROM _graph_op_time) AS t
  GROUP BY run, phase, rank, name
)
SELECT p.run, p.phase, p.rank, p.name, p.calls, p.gpu_calls, p.host_ns, p.host_self_ns,
       p.gpu_kernels, p.gpu_self_ns, p.gpu_self_busy_ns, p.gpu_total_ns,
       p.gpu_total_busy_ns, p.gpu_self_comm_ns, p.gpu_self_comm_ns > 0 AS communication,
       CASE WHEN g.busy_ns > 0 THEN CAST(p.gpu_self_busy_ns AS DOUBLE) / g.busy_ns END
         AS gpu_self_share,
       CASE WHEN g.busy_ns > 0 THEN CAST(p.gpu_total_busy_ns AS DOUBLE) / g.busy_ns END
         AS gpu_total_share,
       p.backward_calls, p.backward_gpu_total_ns, p.backward_gpu_total_busy_ns
FROM per_name AS p
LEFT JOIN rank_gpu_time AS g
  ON g.run = p.run AND g.phase = p.phase AND g.rank = p.rank;
