-- _op_time's figures of the ops whose kernels a graph launch replayed: the captured ops
-- op_kernels attributes replayed kernels to (via_capture), and the captured ops enclosing
-- them, per name in the replay's trace, for op_stats to add to the ops the trace ran itself.
--
-- A call is one captured op in one graph launch (_graph_op_calls: each replay runs every
-- captured op once), counted when it or an op it encloses launched a replayed kernel. Self
-- and total follow op_calls' rules, and a call within a captured call of its name adds
-- nothing to the name's total, as in _op_time. Its CPU time is the graph launch's, which
-- stays with what encloses the launch: host_ns and host_self_ns are 0. No backward call
-- links to it.
--
-- Reads: _graph_op_calls
--
-- Columns: those of _op_time
CREATE OR REPLACE VIEW _graph_op_time AS
SELECT run, phase, rank, trace_id, name, count(*) AS calls,
       count(CASE WHEN gpu_kernels > 0 THEN 1 END) AS gpu_calls,
       CAST(0 AS BIGINT) AS host_ns, CAST(0 AS BIGINT) AS host_self_ns,
       CAST(sum(gpu_kernels) AS BIGINT) AS gpu_kernels,
       CAST(sum(gpu_self_ns) AS BIGINT) AS gpu_self_ns,
       CAST(sum(gpu_self_busy_ns) AS BIGINT) AS gpu_self_busy_ns,
       CAST(sum(CASE WHEN NOT nested THEN gpu_total_ns ELSE 0 END) AS BIGINT) AS gpu_total_ns,
       CAST(sum(CASE WHEN NOT nested THEN gpu_total_busy_ns ELSE 0 END) AS BIGINT)
         AS gpu_total_busy_ns,
       CAST(sum(gpu_self_comm_ns) AS BIGINT) AS gpu_self_comm_ns,
       CAST(0 AS BIGINT) AS backward_calls, CAST(0 AS BIGINT) AS backward_gpu_total_ns,
       CAST(0 AS BIGINT) AS backward_gpu_total_busy_ns
FROM _graph_op_calls
GROUP BY run, phase, rank, trace_id, name;
