-- Skew across ranks per run and phase: for each class and each kernel, the total time on every
-- rank, and the min, median and max over ranks with the slowest rank. Finds stragglers and
-- expert-parallel load imbalance. GPU work only: gpu_user_annotation ranges are windows, not
-- kernels.
--
-- Reads: kernel_classes
--
-- Columns:
--   run, phase         partition
--   level              'class' or 'kernel'
--   class              the class (of the kernel, at level kernel)
--   name               the kernel's full name; NULL at level class
--   ranks              ranks that ran it
--   min_ns             smallest per-rank total, ns
--   median_ns          median per-rank total (nearest rank: an actual rank's total), ns
--   max_ns             largest per-rank total, ns
--   slowest_rank       the rank with the largest total (lowest rank on ties)
--   max_over_median    max_ns / median_ns
CREATE OR REPLACE VIEW rank_skew AS
WITH work AS NOT MATERIALIZED (
  SELECT * FROM kernel_classes WHERE category <> 'gpu_user_annotation'
),
per_rank AS (
  SELECT run, phase, rank, 'class' AS level, class, CAST(NULL AS VARCHAR) AS name,
         CAST(sum(dur_ns) AS BIGINT) AS total_ns
  FROM work
  GROUP BY run, phase, rank, class
  UNION ALL
  SELECT run, phase, rank, 'kernel', min(class), name, CAST(sum(dur_ns) AS BIGINT)
  FROM work
  GROUP BY run, phase, rank, name
),
ranked AS (
  SELECT *, row_number() OVER (
           PARTITION BY run, phase, level, class, name ORDER BY total_ns DESC, rank) AS position
  FROM per_rank
),
summary AS (
  SELECT run, phase, level, class, name,
         count(*) AS ranks,
         min(total_ns) AS min_ns,
         percentile_disc(0.5) WITHIN GROUP (ORDER BY total_ns) AS median_ns,
         max(total_ns) AS max_ns,
         min(CASE WHEN position = 1 THEN rank END) AS slowest_rank
  FROM ranked
  GROUP BY run, phase, level, class, name
)
SELECT *, CASE WHEN median_ns > 0 THEN CAST(max_ns AS DOUBLE) / median_ns END AS max_over_median
FROM summary;
