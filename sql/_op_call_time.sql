-- Each cpu_op call of each trace with its place in the call tree and the GPU time it
-- launched, as measured at ingest (`op_call_time`, by op_calls' rules, written without SQL in
-- ingest/ops.py; communication by the default kernel rules). Helper of `op_calls`, which
-- reads these rows instead of adding GPU time up the tree with window passes over every
-- kernel at every query; it computes the traces of _op_calls_live_traces itself.
--
-- When the stored rows do not hold (the effective kernel rules are not the defaults, or the
-- warehouse was created before op_call_time existed), the query layer replaces this view by
-- sql/live/_op_call_time.sql, which holds no row, and _op_calls_live_traces names every
-- trace.
--
-- Reads: op_call_time
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
--   gpu_self_comm_ns     the part of gpu_self_ns in communication kernels, ns
--   gpu_self_busy_ns     length of the union of their intervals, ns
--   gpu_total_ns         sum of the durations of its own and its descendants' activity, ns
--   gpu_total_busy_ns    length of the union of those intervals, ns
CREATE OR REPLACE VIEW _op_call_time AS
SELECT run, phase, rank, trace_id, event_index, name, pid, tid, ts_ns, dur_ns, depth,
       parent_event_index, top_event_index, partial_overlap, gpu_kernels, gpu_self_ns,
       gpu_self_comm_ns, gpu_self_busy_ns, gpu_total_ns, gpu_total_busy_ns
FROM op_call_time;
