-- Metric-level difference between two runs, or two phases of runs (table macros behind
-- `tracewh diff`'s metrics): each metric of `run_metrics` per phase and rank, or, when the
-- sides do not have the same ranks (8 ranks against 64, or rank 3 against rank 1), the
-- per-phase median over ranks (rank NULL).
--
--   SELECT * FROM run_metric_diff_with(base, new, threshold_pct, min_ns, phase, rank)
--   SELECT * FROM run_phase_metric_diff_with(base, base_phase, new, new_phase, threshold_pct,
--                                            min_ns, rank)
--
-- run_metric_diff_with compares one phase (or, NULL, every phase) of both runs;
-- run_phase_metric_diff_with compares phase base_phase of run base with phase new_phase of
-- run new (a NULL phase is the other side's, both NULL every phase; nothing when both sides
-- are the same run and phase). A metric regresses when it moves the wrong way by more than
-- the threshold: overlap_ratio down by more than threshold_pct percentage points; the ns
-- metrics up by more than threshold_pct percent and by more than min_ns; busbw_gbps down by
-- more than threshold_pct percent. Improved likewise the other way.
--
-- Reads: run_metrics, traces
-- Parameters: base VARCHAR, new VARCHAR, threshold_pct DOUBLE, min_ns BIGINT,
--   phase_filter VARCHAR, rank_filter INTEGER, base_phase VARCHAR, new_phase VARCHAR
--
-- Columns:
--   phase                the phase compared; when the sides are two different phases,
--                        'BASE_PHASE->NEW_PHASE' (prefill->decode)
--   rank                 the rank (NULL when compared as medians over ranks)
--   metric               overlap_ratio, exposed_comm_ns, step_time_ns, gpu_idle_ns,
--                        busbw_gbps or collective_wait_ns
--   base_value, new_value
--   delta                new_value - base_value
--   delta_pct            delta / base_value * 100 (NULL when base is 0 or missing)
--   status               regressed, improved or unchanged; added (only in new) or removed
--                        (only in base); unchanged when neither side has a value (overlap_ratio
--                        of two sides without communication)
CREATE OR REPLACE MACRO run_phase_metric_diff_with(base, base_phase, new, new_phase,
                                                   threshold_pct, min_ns, rank_filter) AS TABLE
WITH partitions AS (
  -- each side's partitions: the one place a (run, phase) is given its side
  SELECT DISTINCT side, run, phase, rank
  FROM (
    SELECT CASE WHEN run = base AND phase = coalesce(base_phase, new_phase, phase) THEN 'base'
                WHEN run = new AND phase = coalesce(new_phase, base_phase, phase) THEN 'new'
           END AS side, run, phase, rank
    FROM traces
    WHERE run IN (base, new)
      AND (base <> new OR coalesce(base_phase, new_phase) <> coalesce(new_phase, base_phase))
      AND (rank_filter IS NULL OR rank = rank_filter)
  ) AS sided
  WHERE side IS NOT NULL
),
chosen AS (
  SELECT p.side,
         CASE WHEN coalesce(base_phase, new_phase) <> coalesce(new_phase, base_phase)
              THEN coalesce(base_phase, new_phase) || '->' || coalesce(new_phase, base_phase)
              ELSE m.phase END AS phase,
         m.rank, m.metric, m.value
  FROM run_metrics AS m
  JOIN partitions AS p ON p.run = m.run AND p.phase = m.phase AND p.rank = m.rank
),
side_ranks AS (
  SELECT DISTINCT side, rank FROM partitions
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
         WHEN base_value IS NULL AND new_value IS NULL THEN 'unchanged'
         WHEN base_value IS NULL THEN 'added'
         WHEN new_value IS NULL THEN 'removed'
         WHEN metric = 'overlap_ratio' THEN
           CASE WHEN base_value - new_value > threshold_pct / 100.0 THEN 'regressed'
                WHEN new_value - base_value > threshold_pct / 100.0 THEN 'improved'
                ELSE 'unchanged' END
         WHEN metric = 'busbw_gbps' THEN
           CASE WHEN 100.0 * (base_value - new_value) > threshold_pct * base_value
                THEN 'regressed'
                WHEN 100.0 * (new_value - base_value) > threshold_pct * base_value
                THEN 'improved'
                ELSE 'unchanged' END
         WHEN new_value - base_value > min_ns
          AND 100.0 * (new_value - base_value) > threshold_pct * base_value THEN 'regressed'
         WHEN base_value - new_value > min_ns
          AND 100.0 * (base_value - new_value) > threshold_pct * base_value THEN 'improved'
         ELSE 'unchanged'
       END AS status
FROM joined
ORDER BY phase, rank, metric;

CREATE OR REPLACE MACRO run_metric_diff_with(base, new, threshold_pct, min_ns, phase_filter,
                                             rank_filter) AS TABLE
SELECT * FROM run_phase_metric_diff_with(base, phase_filter, new, phase_filter, threshold_pct,
                                         min_ns, rank_filter);
