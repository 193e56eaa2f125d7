-- The runtime or driver call behind each correlation id of a trace: what launched the GPU
-- activity carrying that id. Helper of the launch views.
--
-- Calls are matched to GPU activity within a trace by correlation id (0 and NULL link
-- nothing). When several calls share an id, the earliest is the launch. A CUDA or HIP graph
-- launch is one call and one id for every kernel the graph runs.
--
-- Reads: runtime
--
-- Columns:
--   run, phase, rank   partition
--   trace_id           the trace
--   correlation        the correlation id
--   launch_name        the call (cudaLaunchKernel, hipGraphLaunch, ...)
--   launch_ts_ns       when the call started on the CPU, ns
--   launch_dur_ns      how long the call took on the CPU, ns
--   launch_tid         CPU thread that made the call
CREATE OR REPLACE VIEW _launch_calls AS
SELECT run, phase, rank, trace_id, correlation,
       min_by(name, ts_ns) AS launch_name,
       min(ts_ns) AS launch_ts_ns,
       min_by(dur_ns, ts_ns) AS launch_dur_ns,
       min_by(tid, ts_ns) AS launch_tid
FROM runtime
WHERE correlation IS NOT NULL AND correlation <> 0
GROUP BY run, phase, rank, trace_id, correlation;
