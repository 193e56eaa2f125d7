-- Headline metrics per run, phase and rank, one row per metric: what `tracewh diff` compares
-- and `tracewh trend` follows across runs.
--
-- Metrics:
--   overlap_ratio     overlap_ns / comm_ns (view overlap); higher is better
--   exposed_comm_ns   communication not hidden under computation, ns; lower is better
--   step_time_ns      median duration of the rank's ProfilerStep#N spans, ns; lower is better
--   gpu_idle_ns       time the GPU was idle between its first and last activity (all
--                     streams pooled) within each capture group (gpu_busy.span_ns - busy_ns:
--                     never the time between captures), ns; lower is better
--   busbw_gbps        mean bus bandwidth of the matched collective instances the rank took
--                     part in that have one (collective_instances, GB/s with GB = 10^9
--                     bytes); higher is better
--   collective_wait_ns  the rank's waits for the last rank summed over its matched
--                     collectives (collective_waits), ns; lower is better
--
-- Reads: cpu_ops, gpu_busy, overlap, collective_waits
--
-- Columns:
--   run, phase, rank   partition
--   metric             one of the names above
--   value              the figure (DOUBLE; the ns metrics are whole numbers)
CREATE OR REPLACE VIEW run_metrics AS
WITH collectives AS (
  -- one pass over the collective calls for both of their metrics
  -- the mean is taken over exact decimals so that it does not depend on the order in
  -- which a parallel engine adds the calls up (a double sum differs in its last bit)
  SELECT run, phase, rank,
         CAST(avg(CAST(busbw_gbps AS DECIMAL(38, 9))) AS DOUBLE) AS busbw_gbps,
         sum(CASE WHEN matched THEN wait_ns END) AS wait_ns,
         count(CASE WHEN matched THEN 1 END) AS matched_calls
  FROM collective_waits
  GROUP BY run, phase, rank
)
SELECT run, phase, rank, 'overlap_ratio' AS metric, overlap_ratio AS value
FROM overlap
UNION ALL
SELECT run, phase, rank, 'exposed_comm_ns', CAST(exposed_comm_ns AS DOUBLE)
FROM overlap
UNION ALL
SELECT run, phase, rank, 'step_time_ns',
       CAST(percentile_disc(0.5) WITHIN GROUP (ORDER BY dur_ns) AS DOUBLE)
FROM cpu_ops
WHERE name LIKE 'ProfilerStep#%' AND dur_ns IS NOT NULL
GROUP BY run, phase, rank
UNION ALL
SELECT run, phase, rank, 'gpu_idle_ns', CAST(span_ns - busy_ns AS DOUBLE)
FROM gpu_busy
UNION ALL
SELECT run, phase, rank, 'busbw_gbps', busbw_gbps
FROM collectives
WHERE busbw_gbps IS NOT NULL
UNION ALL
SELECT run, phase, rank, 'collective_wait_ns', CAST(wait_ns AS DOUBLE)
FROM collectives
WHERE matched_calls > 0;
