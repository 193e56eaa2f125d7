-- Launch latency, one row per launched GPU activity: from the runtime/driver call's start on
-- the CPU to the activity's start on the GPU (joined on the correlation id).
--
-- Reads: kernel_launches
--
-- Columns:
--   run, phase, rank, trace_id   partition and trace
--   correlation        the correlation id
--   launch_name        cudaLaunchKernel, cuLaunchKernelEx, hipLaunchKernel, cudaMemcpyAsync...
--   launch_tid         CPU thread of the call
--   launch_ts_ns       start of the call, ns
--   name, short_name, category, class, stream   the GPU activity
--   ts_ns              its start on the GPU, ns
--   dur_ns             its duration on the GPU, ns
--   launch_latency_ns  ts_ns - launch_ts_ns
--   export_command     the `tracewh export` command that writes the window from the launch
--                      to the activity's end as Chrome-trace JSON (Perfetto, chrome://tracing)
CREATE OR REPLACE VIEW launch_latency AS
SELECT run, phase, rank, trace_id, correlation, launch_name, launch_tid, launch_ts_ns,
       name, short_name, category, class, stream, ts_ns, dur_ns, launch_latency_ns,
       'tracewh export ' || run || ' --rank ' || CAST(rank AS VARCHAR) || ' --phase ' || phase
         || ' --trace ' || trace_id || ' --from-ns ' || CAST(launch_ts_ns AS VARCHAR)
         || ' --to-ns ' || CAST(ts_ns + coalesce(dur_ns, 0) AS VARCHAR) || ' --out ' || run
         || '-rank' || CAST(rank AS VARCHAR) || '-launch-' || CAST(correlation AS VARCHAR)
         || '.json.gz' AS export_command
FROM kernel_launches
WHERE launch_ts_ns IS NOT NULL;
