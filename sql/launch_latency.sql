-- Launch latency, one row per launched GPU activity: from the runtime/driver call's start on
-- the CPU to the activity's start on the GPU (joined on the correlation id).
--
-- Columns:
--   run, phase, rank, trace_id   partition and trace
--   correlation        the correlation id
--   launch_name        cudaLaunchKernel, cuLaunchKernelEx, hipLaunchKernel, cudaMemcpyAsync...
--   launch_tid         CPU thread of the call
--   launch_ts_ns       start of the call, ns
--   name, short_name, category, class, stream   the GPU activity
--   ts_ns              its start on the GPU, ns
--   launch_latency_ns  ts_ns - launch_ts_ns
CREATE OR REPLACE VIEW launch_latency AS
SELECT run, phase, rank, trace_id, correlation, launch_name, launch_tid, launch_ts_ns,
       name, short_name, category, class, stream, ts_ns, launch_latency_ns
FROM kernel_launches
WHERE launch_ts_ns IS NOT NULL;
