-- _op_call_time where the rows measured at ingest do not hold (the effective kernel rules
-- are not the defaults, or the warehouse was created before op_call_time existed): no row,
-- op_calls computing every trace (_op_calls_live_traces names them all).
--
-- Reads: op_call_time
--
-- Columns: as sql/_op_call_time.sql
CREATE OR REPLACE VIEW _op_call_time AS
SELECT run, phase, rank, trace_id, event_index, name, pid, tid, ts_ns, dur_ns, depth,
       parent_event_index, top_event_index, partial_overlap, gpu_kernels, gpu_self_ns,
       gpu_self_comm_ns, gpu_self_busy_ns, gpu_total_ns, gpu_total_busy_ns
FROM op_call_time
WHERE false;
