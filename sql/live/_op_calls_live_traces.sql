-- _op_calls_live_traces where the rows measured at ingest (op_call_time) do not hold (the
-- effective kernel rules are not the defaults, or the warehouse was created before
-- op_call_time existed): every trace with a cpu_op, op_calls computing them all at query
-- time.
--
-- Reads: cpu_ops
--
-- Columns:
--   run, phase, rank    partition
--   trace_id            the trace
CREATE OR REPLACE VIEW _op_calls_live_traces AS
SELECT DISTINCT run, phase, rank, trace_id
FROM cpu_ops
WHERE category = 'cpu_op';
