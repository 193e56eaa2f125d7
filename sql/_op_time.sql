-- Each trace's host and GPU time per cpu_op name, as measured at ingest (`op_time`, by the
-- rules of op_calls, op_stats and _backward_links, written without SQL in ingest/ops.py;
-- communication by the default kernel rules). Helper of `op_stats`. When the stored rows do
-- not hold (the effective kernel rules are not the defaults, or the warehouse was created
-- before op_time existed), the query layer replaces this view by sql/live/_op_time.sql,
-- which computes the same rows from the host call tree.
--
-- Reads: op_time
--
-- Columns:
--   run, phase, rank             partition
--   trace_id                     the trace
--   name                         the op's name
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
--   backward_calls               backward calls linked to calls of this op
--   backward_gpu_total_ns        their gpu_total_ns summed, ns
--   backward_gpu_total_busy_ns   their gpu_total_busy_ns summed, ns
CREATE OR REPLACE VIEW _op_time AS
SELECT run, phase, rank, trace_id, name, calls, gpu_calls, host_ns, host_self_ns, gpu_kernels,
       gpu_self_ns, gpu_self_busy_ns, gpu_total_ns, gpu_total_busy_ns, gpu_self_comm_ns,
       backward_calls, backward_gpu_total_ns, backward_gpu_total_busy_ns
FROM op_time;
