-- Kernel-level difference between two runs: the rows behind `tracewh diff`, as table macros
-- for ad hoc queries and BI tools.
--
--   SELECT * FROM run_diff('nightly-1128', 'nightly-1129')
--   SELECT * FROM run_diff_with(base, new, threshold_pct, min_ns, key_by, phase, rank)
--
-- run_diff uses the defaults of `tracewh diff`: threshold 5 %, noise floor 10000 ns, kernels
-- matched by full name, every phase and rank. key_by is 'name', 'short_name' (runs on other
-- builds or hardware) or 'class'; phase and rank may be NULL (all). When both runs have the
-- same number of ranks, count and total are sums over ranks; otherwise per-rank medians (a
-- rank without the kernel counts as 0; a kernel whose median count is 0 on both sides, run
-- by few ranks, is left out). mean/p50/p90 are over all the kernel's executions.
--
-- Columns:
--   name                     the kernel (or short name, or class, per key_by)
--   class                    its class
--   base_count, new_count    executions
--   base_total_ns, new_total_ns   total duration, ns
--   base_mean_ns, new_mean_ns, base_p50_ns, new_p50_ns, base_p90_ns, new_p90_ns
--   delta_ns                 new_total_ns - base_total_ns
--   delta_pct                delta_ns / base_total_ns * 100 (NULL when base is 0)
--   status                   added, removed, regressed, improved or unchanged: regressed or
--                            improved when the total moves by more than threshold_pct and by
--                            more than min_ns
-- Rows are ordered by |delta_ns| descending, ties by name.
CREATE OR REPLACE MACRO run_diff_with(base, new, threshold_pct, min_ns, key_by, phase_filter,
                                      rank_filter) AS TABLE
WITH chosen AS (
  SELECT CASE WHEN run = base THEN 'base' ELSE 'new' END AS side, phase, rank,
         CASE key_by WHEN 'short_name' THEN short_name WHEN 'class' THEN class ELSE name END
           AS key,
         class, dur_ns
  FROM kernel_classes
  WHERE run IN (base, new) AND base <> new
    AND (phase_filter IS NULL OR phase = phase_filter)
    AND (rank_filter IS NULL OR rank = rank_filter)
    AND category <> 'gpu_user_annotation' AND dur_ns IS NOT NULL
),
side_ranks AS (
  SELECT DISTINCT CASE WHEN run = base THEN 'base' ELSE 'new' END AS side, phase, rank
  FROM traces
  WHERE run IN (base, new)
    AND (phase_filter IS NULL OR phase = phase_filter)
    AND (rank_filter IS NULL OR rank = rank_filter)
),
rank_counts AS (
  SELECT sum(CASE WHEN side = 'base' THEN 1 ELSE 0 END) AS base_ranks,
         sum(CASE WHEN side = 'new' THEN 1 ELSE 0 END) AS new_ranks
  FROM side_ranks
),
per_rank AS (
  SELECT side, key, phase, rank, count(*) AS n, sum(dur_ns) AS total
  FROM chosen
  GROUP BY side, key, phase, rank
),
filled AS (
  SELECT k.side, k.key, coalesce(p.n, 0) AS n, coalesce(p.total, 0) AS total
  FROM (SELECT DISTINCT side, key FROM chosen) AS k
  JOIN side_ranks AS r ON r.side = k.side
  LEFT JOIN per_rank AS p
    ON p.side = k.side AND p.key = k.key AND p.phase = r.phase AND p.rank = r.rank
),
totals AS (
  SELECT side, key,
         CASE WHEN (SELECT base_ranks = new_ranks FROM rank_counts) THEN sum(n)
              ELSE percentile_disc(0.5) WITHIN GROUP (ORDER BY n) END AS count,
         CASE WHEN (SELECT base_ranks = new_ranks FROM rank_counts) THEN sum(total)
              ELSE percentile_disc(0.5) WITHIN GROUP (ORDER BY total) END AS total_ns
  FROM filled
  GROUP BY side, key
),
spread AS (
  SELECT side, key, min(class) AS class, avg(dur_ns) AS mean_ns,
         percentile_disc(0.5) WITHIN GROUP (ORDER BY dur_ns) AS p50_ns,
         percentile_disc(0.9) WITHIN GROUP (ORDER BY dur_ns) AS p90_ns
  FROM chosen
  GROUP BY side, key
),
sides AS (
  SELECT t.side, t.key, s.class, CAST(t.count AS BIGINT) AS count,
         CAST(t.total_ns AS BIGINT) AS total_ns, s.mean_ns, s.p50_ns, s.p90_ns
  FROM totals AS t
  JOIN spread AS s ON s.side = t.side AND s.key = t.key
),
joined AS (
  SELECT coalesce(b.key, n.key) AS name,
         coalesce(n.class, b.class) AS class,
         b.key IS NOT NULL AS in_base,
         n.key IS NOT NULL AS in_new,
         coalesce(b.count, 0) AS base_count, coalesce(n.count, 0) AS new_count,
         coalesce(b.total_ns, 0) AS base_total_ns, coalesce(n.total_ns, 0) AS new_total_ns,
         b.mean_ns AS base_mean_ns, n.mean_ns AS new_mean_ns,
         b.p50_ns AS base_p50_ns, n.p50_ns AS new_p50_ns,
         b.p90_ns AS base_p90_ns, n.p90_ns AS new_p90_ns
  FROM (SELECT * FROM sides WHERE side = 'base') AS b
  FULL OUTER JOIN (SELECT * FROM sides WHERE side = 'new') AS n ON n.key = b.key
)
SELECT name, class, base_count, new_count, base_total_ns, new_total_ns,
       base_mean_ns, new_mean_ns, base_p50_ns, new_p50_ns, base_p90_ns, new_p90_ns,
       new_total_ns - base_total_ns AS delta_ns,
       CASE WHEN base_total_ns > 0
            THEN 100.0 * (new_total_ns - base_total_ns) / base_total_ns END AS delta_pct,
       CASE
         WHEN NOT in_base THEN 'added'
         WHEN NOT in_new THEN 'removed'
         WHEN new_total_ns - base_total_ns > min_ns
          AND 100.0 * (new_total_ns - base_total_ns) > threshold_pct * base_total_ns
           THEN 'regressed'
         WHEN base_total_ns - new_total_ns > min_ns
          AND 100.0 * (base_total_ns - new_total_ns) > threshold_pct * base_total_ns
           THEN 'improved'
         ELSE 'unchanged'
       END AS status
FROM joined
WHERE base_count > 0 OR new_count > 0
ORDER BY abs(new_total_ns - base_total_ns) DESC, name;

CREATE OR REPLACE MACRO run_diff(base, new) AS TABLE
SELECT * FROM run_diff_with(base, new, 5, 10000, 'name', NULL, NULL);
