-- GPU activity joined to the runtime or driver call that launched it (same trace, same
-- correlation id). Kernels with no launch in the trace (GPU-only traces, gpu_user_annotation)
-- keep NULL launch columns.
--
-- Columns: every column of `kernel_classes`, plus
--   launch_name        the runtime/driver call (cudaLaunchKernel, hipLaunchKernel, ...)
--   launch_ts_ns       when the call started on the CPU, ns
--   launch_dur_ns      how long the call took on the CPU, ns
--   launch_tid         CPU thread that made the call
--   launch_latency_ns  from the call's start to the kernel's start on the GPU, ns
CREATE OR REPLACE VIEW kernel_launches AS
WITH launches AS (
  SELECT run, phase, rank, trace_id, correlation,
         min_by(name, ts_ns) AS launch_name,
         min(ts_ns) AS launch_ts_ns,
         min_by(dur_ns, ts_ns) AS launch_dur_ns,
         min_by(tid, ts_ns) AS launch_tid
  FROM runtime
  WHERE correlation IS NOT NULL AND correlation <> 0
  GROUP BY run, phase, rank, trace_id, correlation
)
SELECT
  k.*,
  l.launch_name,
  l.launch_ts_ns,
  l.launch_dur_ns,
  l.launch_tid,
  k.ts_ns - l.launch_ts_ns AS launch_latency_ns
FROM kernel_classes AS k
LEFT JOIN launches AS l
  ON l.run = k.run AND l.phase = k.phase AND l.rank = k.rank AND l.trace_id = k.trace_id
 AND l.correlation = k.correlation;
