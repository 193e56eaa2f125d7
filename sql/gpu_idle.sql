-- GPU idle time per run, phase, rank and stream, with the idle gaps classified.
--
--   host_wait    the next kernel was launched only after the previous one had finished:
--                the GPU waited for the CPU
--   kernel_wait  a short gap (under 30 us) between kernels already queued: launch and
--                scheduling overhead
--   other        longer gaps with work queued: waits on events, other streams, the network
-- gpu_user_annotation ranges are left out (they mark time, not work). Figures are measured
-- within each capture group of the rank (`capture_spans`: captures overlapping in time) and
-- summed: the time between two captures taken hours apart is not idle time.
--
-- Reads: capture_spans, kernel_launches
--
-- Columns:
--   run, phase, rank   partition
--   stream             GPU stream
--   kernels            activities on the stream
--   busy_ns            union of the stream's activity, ns
--   span_ns            from the first start to the last end on the stream, ns, within each
--                      capture group, summed over groups
--   idle_ns            span_ns - busy_ns, the sum of the gaps
--   host_wait_ns, kernel_wait_ns, other_idle_ns   idle_ns split by cause
--   idle_ratio         idle_ns / span_ns
CREATE OR REPLACE VIEW gpu_idle AS
WITH activity AS (
  SELECT k.run, k.phase, k.rank, k.stream, c.capture_group, k.ts_ns AS start_ns,
         k.ts_ns + k.dur_ns AS end_ns, k.launch_ts_ns
  FROM kernel_launches AS k
  JOIN capture_spans AS c USING (run, phase, rank, trace_id)  -- a run filter reaches c
  WHERE k.category <> 'gpu_user_annotation' AND k.dur_ns IS NOT NULL
),
ordered AS (
  SELECT *,
         max(end_ns) OVER (
           PARTITION BY run, phase, rank, stream, capture_group ORDER BY start_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_until
  FROM activity
),
gaps AS (
  SELECT *,
         CASE WHEN start_ns > covered_until THEN start_ns - covered_until ELSE 0 END AS gap_ns
  FROM ordered
),
classified AS (
  SELECT *,
         CASE
           WHEN gap_ns = 0 THEN NULL
           WHEN launch_ts_ns >= covered_until THEN 'host_wait'
           WHEN gap_ns < 30000 THEN 'kernel_wait'
           ELSE 'other'
         END AS cause
  FROM gaps
),
per_group AS (
  SELECT run, phase, rank, stream, capture_group,
         count(*) AS kernels,
         sum(greatest(0, end_ns - greatest(start_ns, coalesce(covered_until, start_ns))))
           AS busy_ns,
         max(end_ns) - min(start_ns) AS span_ns,
         sum(gap_ns) AS idle_ns,
         sum(CASE WHEN cause = 'host_wait' THEN gap_ns ELSE 0 END) AS host_wait_ns,
         sum(CASE WHEN cause = 'kernel_wait' THEN gap_ns ELSE 0 END) AS kernel_wait_ns,
         sum(CASE WHEN cause = 'other' THEN gap_ns ELSE 0 END) AS other_idle_ns
  FROM classified
  GROUP BY run, phase, rank, stream, capture_group
),
totals AS (
  SELECT run, phase, rank, stream,
         CAST(sum(kernels) AS BIGINT) AS kernels,
         CAST(sum(busy_ns) AS BIGINT) AS busy_ns,
         CAST(sum(span_ns) AS BIGINT) AS span_ns,
         CAST(sum(idle_ns) AS BIGINT) AS idle_ns,
         CAST(sum(host_wait_ns) AS BIGINT) AS host_wait_ns,
         CAST(sum(kernel_wait_ns) AS BIGINT) AS kernel_wait_ns,
         CAST(sum(other_idle_ns) AS BIGINT) AS other_idle_ns
  FROM per_group
  GROUP BY run, phase, rank, stream
)
SELECT *, CASE WHEN span_ns > 0 THEN CAST(idle_ns AS DOUBLE) / span_ns END AS idle_ratio
FROM totals;
