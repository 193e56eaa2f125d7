-- Communication/computation overlap per ProfilerStep#N instance (every step kept, the last too).
--
-- A kernel counts in the window when the runtime call that launched it falls in it (its own
-- start when it has no launch): GPU work runs after the CPU that issued it.
--
-- Reads: _overlap_windows
--
-- Columns:
--   run, phase, rank     partition
--   trace_id             the trace holding the window
--   event_index          the window's event in cpu_ops
--   step                 the step's name (ProfilerStep#N)
--   start_ns, end_ns     the window on the CPU, ns
--   dur_ns               end_ns - start_ns
--   comm_ns              length of the union of communication kernels in the window, ns
--   compute_ns           length of the union of computation kernels in the window, ns
--   overlap_ns           length of their intersection, ns
--   overlap_ratio        overlap_ns / comm_ns; NULL when there is no communication
--   exposed_comm_ns      communication not hidden under computation: comm_ns - overlap_ns
--   export_command       the `tracewh export` command that writes the window's events as
--                        Chrome-trace JSON (Perfetto, chrome://tracing)
CREATE OR REPLACE VIEW overlap_by_step AS
SELECT
  run, phase, rank, trace_id, window_index AS event_index, window_name AS step,
  window_start_ns AS start_ns, window_end_ns AS end_ns,
  window_end_ns - window_start_ns AS dur_ns,
  first_ns AS comm_ns, second_ns AS compute_ns, overlap_ns,
  CASE WHEN first_ns > 0 THEN CAST(overlap_ns AS DOUBLE) / first_ns END AS overlap_ratio,
  first_ns - overlap_ns AS exposed_comm_ns,
  export_command
FROM _overlap_windows
WHERE scope = 'step';
