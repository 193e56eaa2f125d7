-- The union lengths of each step and user-annotation window as measured at ingest
-- (`window_time`, by the rules of `_overlap_intervals` under the default kernel rules): the
-- step and annotation rows of `_overlap_windows`. When the effective rules are not the
-- defaults, the query layer replaces this view by sql/live/_window_time.sql, which measures
-- them from the live-classified kernels.
--
-- Reads: window_time
--
-- Columns:
--   run, phase, rank   partition
--   scope              step or annotation
--   trace_id           the trace holding the window
--   window_index       the window's event in cpu_ops
--   window_name        the step or annotation name
--   window_start_ns, window_end_ns   the window on the CPU, ns
--   first_ns           length of the union of the communication kernels launched in it
--   second_ns          length of the union of the computation kernels launched in it
--   union_ns           length of the union of both
CREATE OR REPLACE VIEW _window_time AS
SELECT run, phase, rank, scope, trace_id, event_index AS window_index, name AS window_name,
       start_ns AS window_start_ns, end_ns AS window_end_ns, comm_ns AS first_ns,
       compute_ns AS second_ns, union_ns
FROM window_time;
