-- Metric-level difference between two runs (table macro behind `tracewh diff`'s metrics):
-- each metric of `run_metrics` per phase and rank, or, when the runs do not have the same
-- ranks (8 ranks against 64, or rank 3 against rank 1), the per-phase median over ranks (rank
-- NULL).
--
--   SELECT * FROM run_metric_diff_with(base, new, threshold_pct, min_ns, phase, rank)
--
-- A metric regresses when it moves the wrong way by more than the threshold: overlap_ratio
-- down by more than threshold_pct percentage points; the ns metrics up by more than
-- threshold_pct percent and by more than min_ns. Improved likewise the other way.
--
-- Columns:
--   phase, rank          where (rank NULL when compared as medians over ranks)
--   metric               overlap_ratio, exposed_comm_ns, step_time_ns or gpu_idle_ns
--   base_value, new_value
--   delta                new_value - base_value
--   delta_pct            delta / base_value * 100 (NULL when base is 0 or missing)
--   status               regressed, improved or unchanged; added (only in new) or removed
--                        (only in base)
CREATE OR REPLACE MACRO run_metric_diff_with(base, new, threshold_pct, min_ns, phase_filter,
                                             rank_filter) AS TABLE
WITH chosen AS (
  SELECT CASE WHEN run = base THEN 'base' ELSE 'new' END AS side, phase, rank, metric, value
  FROM run_metrics
  WHERE run IN (base, new) AND base <> new
    AND (phase_filter IS NULL OR phase = phase_filter)
    AND (rank_filter IS NULL OR rank = rank_filter)
),
side_ranks AS (
  SELECT DISTINCT CASE WHEN run = base THEN 'base' ELSE 'new' END AS side, rank
  FROM traces
  WHERE run IN (base, new)
    AND (phase_filter IS NULL OR phase = phase_filter)
    AND (rank_filter IS NULL OR rank = rank_filter)
),
same_ranks AS (
  -- every rank of either run is a rank of both (the aggregates read columns only: Spark
  -- refuses a macro parameter inside an aggregate of a subquery)
  SELECT count(DISTINCT rank) = count(DISTINCT CASE WHEN side = 'base' THEN rank END)
     AND count(DISTINCT rank) = count(DISTINCT CASE WHEN side = 'new' THEN rank END) AS same
  FROM side_ranks
),
grouped AS (
  SELECT side, phase, CASE WHEN (SELECT same FROM same_ranks) THEN rank END AS rank, metric,
         percentile_disc(0.5) WITHIN GROUP (ORDER BY value) AS value
  FROM chosen
  GROUP BY side, phase, CASE WHEN (SELECT same FROM same_ranks) THEN rank END, metric
),
joined AS (
  SELECT coalesce(b.phase, n.phase) AS phase, coalesce(b.rank, n.rank) AS rank,
         coalesce(b.metric, n.metric) AS metric, b.value AS base_value, n.value AS new_value
  FROM (SELECT * FROM grouped WHERE side = 'base') AS b
  FULL OUTER JOIN (SELECT * FROM grouped WHERE side = 'new') AS n
    ON n.phase = b.phase AND n.metric = b.metric AND n.rank IS NOT DISTINCT FROM b.rank
)
SELECT phase, rank, metric, base_value, new_value,
       new_value - base_value AS delta,
       CASE WHEN base_value <> 0 THEN 100.0 * (new_value - base_value) / base_value END
         AS delta_pct,
       CASE
         WHEN base_value IS NULL THEN 'added'
         WHEN new_value IS NULL THEN 'removed'
         WHEN metric = 'overlap_ratio' THEN
           CASE WHEN base_value - new_value > threshold_pct / 100.0 THEN 'regressed'
                WHEN new_value - base_value > threshold_pct / 100.0 THEN 'improved'
                ELSE 'unchanged' END
         WHEN new_value - base_value > min_ns
          AND 100.0 * (new_value - base_value) > threshold_pct * base_value THEN 'regressed'
         WHEN base_value - new_value > min_ns
          AND 100.0 * (base_value - new_value) > threshold_pct * base_value THEN 'improved'
         ELSE 'unchanged'
       END AS status
FROM joined
ORDER BY phase, rank, metric;
