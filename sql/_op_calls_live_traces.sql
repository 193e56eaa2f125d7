-- The traces whose op_calls rows are computed at query time rather than read as measured at
-- ingest (_op_call_time): those holding GPU activity that a graph launch replayed and that
-- op_kernels attributes through its capture (via_capture). Which activity that is is known
-- only once the run holds the capture, never at ingest; op_calls leaves it out of the
-- replaying trace's ops, whose figures the ingest measured with it. Read from the
-- graph_replay_kernels mart, empty where no run holds a capture, so that those runs pay
-- nothing for it.
--
-- Where the stored rows do not hold, the query layer replaces this view by
-- sql/live/_op_calls_live_traces.sql: every trace.
--
-- Reads: graph_replay_kernels
--
-- Columns:
--   run, phase, rank    partition
--   trace_id            the trace
CREATE OR REPLACE VIEW _op_calls_live_traces AS
SELECT DISTINCT run, phase, rank, trace_id
FROM graph_replay_kernels
WHERE captured_launch_event_index IS NOT NULL;
