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
--
-- Columns:
--   run, phase, rank   partition
--   metric             one of the names above
--   value              the figure (DOUBLE; the ns metrics are whole numbers)
CREATE OR REPLACE VIEW run_metrics AS
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
FROM gpu_busy;
