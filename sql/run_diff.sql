-- Kernel-level difference between two runs, or two phases of runs: the rows behind
-- `tracewh diff`, as table macros for ad hoc queries and BI tools.
--
--   SELECT * FROM run_diff('nightly-1128', 'nightly-1129')
--   SELECT * FROM run_diff_with(base, new, threshold_pct, min_ns, key_by, phase, rank)
--   SELECT * FROM run_phase_diff_with(base, base_phase, new, new_phase, threshold_pct, min_ns,
--                                     key_by, rank)
--
-- run_diff uses the defaults of `tracewh diff`: threshold 5 %, noise floor 10000 ns, kernels
-- matched by full name, every phase and rank. run_diff_with compares one phase (or, NULL,
-- every phase) of both runs; run_phase_diff_with compares phase base_phase of run base with
-- phase new_phase of run new (prefill against decode of one run, say): a NULL phase is the
-- other side's, both NULL every phase. Nothing is compared when both sides are the same run
-- and phase. key_by is 'name', 'short_name' (runs on other builds or hardware), 'class',
-- 'op' (operators: one row per cpu_op name, its calls that launched GPU activity and their
-- self GPU time from op_calls, and a graph replay's kernels as the captured ops' calls, one
-- per op and launch; the activity no op launched is the row '(no op)', counted per
-- activity), 'collective' (communication kernels as their collective, process group and
-- power-of-two size bucket, `all_to_all group 0 16-32 KiB` holding 16384 to 32767 bytes, so
-- that all-to-all-v calls whose sizes vary a little from step to step stay one row; from
-- collective_waits), 'collective_exact' (the exact size: `all_reduce group 0 8196000 B`) or
-- 'critical_path' (each rank's critical path by class, `gpu_compute_bound rank 3`, one
-- execution per step, from rank_critical_path_breakdown: which class of which rank's path
-- grew); rank may be NULL (all). When both sides
-- have the same number of (phase, rank) pairs, count and total are sums over ranks;
-- otherwise per-rank medians (a rank without the kernel counts as 0; a kernel whose median
-- count is 0 on both sides, run by few ranks, is left out). mean/p50/p90 are over all the
-- kernel's executions.
--
-- Reads: kernel_classes, collective_waits, op_calls, op_kernels, rank_critical_path_breakdown,
--   traces
-- Parameters: base VARCHAR, new VARCHAR, threshold_pct DOUBLE, min_ns BIGINT,
--   key_by VARCHAR, phase_filter VARCHAR, rank_filter INTEGER, base_phase VARCHAR,
--   new_phase VARCHAR
--
-- Columns:
--   name                     the kernel (or short name, class, op name, or collective and
--                            size, per key_by)
--   class                    its class
--   base_count, new_count    executions (with key_by 'op': calls)
--   base_total_ns, new_total_ns   total duration, ns
--   base_mean_ns, new_mean_ns, base_p50_ns, new_p50_ns, base_p90_ns, new_p90_ns
--   delta_ns                 new_total_ns - base_total_ns
--   delta_pct                delta_ns / base_total_ns * 100 (NULL when base is 0)
--   status                   added, removed, regressed, improved or unchanged: regressed or
--                            improved when the total moves by more than threshold_pct and by
--                            more than min_ns
--   base_busbw_gbps, new_busbw_gbps   collectives: the median bus bandwidth of the calls'
--                            instances (collective_waits.busbw_gbps; NULL without every rank of
--                            the group), GB/s; NULL for other keys
--   base_algbw_gbps, new_algbw_gbps   collectives: the median of the calls' rank_algbw_gbps
--                            (msg_bytes / the rank's own duration: what one rank allows), GB/s
-- Rows are ordered by |delta_ns| descending, ties by name.
CREATE OR REPLACE MACRO run_phase_diff_with(base, base_phase, new, new_phase, threshold_pct,
                                            min_ns, key_by, rank_filter) AS TABLE
WITH side_ranks AS (
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
collective_sizes AS (
  -- each collective call's size bucket: floor(log2) in floating point can be one off next to
  -- a power of two, so the guess is corrected against exact integer powers of two
  SELECT *,
         CASE WHEN CAST(pow(2, guess) AS BIGINT) > msg_bytes THEN CAST(pow(2, guess - 1) AS BIGINT)
              WHEN CAST(pow(2, guess + 1) AS BIGINT) <= msg_bytes
                THEN CAST(pow(2, guess + 1) AS BIGINT)
              ELSE CAST(pow(2, guess) AS BIGINT) END AS bucket
  FROM (
    SELECT *, CASE WHEN msg_bytes > 0 THEN CAST(floor(log2(msg_bytes)) AS BIGINT) END AS guess
    FROM collective_waits
    WHERE key_by IN ('collective', 'collective_exact') AND dur_ns IS NOT NULL
  ) AS guessed
),
chosen AS (
  SELECT r.side, k.phase, k.rank, k.key, k.class, k.dur_ns, k.busbw_gbps, k.algbw_gbps
  FROM (
    SELECT run, phase, rank,
           CASE key_by WHEN 'short_name' THEN short_name WHEN 'class' THEN class ELSE name END
             AS key,
           class, dur_ns, CAST(NULL AS DOUBLE) AS busbw_gbps, CAST(NULL AS DOUBLE) AS algbw_gbps
    FROM kernel_classes
    WHERE key_by NOT IN ('op', 'collective', 'collective_exact', 'critical_path')
      AND category <> 'gpu_user_annotation' AND dur_ns IS NOT NULL
    UNION ALL
    SELECT run, phase, rank,
           collective || ' group ' || process_group || ' ' ||
           CASE WHEN msg_bytes IS NULL THEN 'unsized'
                WHEN key_by = 'collective_exact' OR msg_bytes = 0
                  THEN CAST(msg_bytes AS VARCHAR) || ' B'
                WHEN bucket < 1024 THEN CAST(bucket AS VARCHAR) || '-'
                  || CAST(2 * bucket AS VARCHAR) || ' B'
                WHEN bucket < 1048576 THEN CAST(bucket // 1024 AS VARCHAR) || '-'
                  || CAST(bucket // 512 AS VARCHAR) || ' KiB'
                WHEN bucket < 1073741824 THEN CAST(bucket // 1048576 AS VARCHAR) || '-'
                  || CAST(bucket // 524288 AS VARCHAR) || ' MiB'
                ELSE CAST(bucket // 1073741824 AS VARCHAR) || '-'
                  || CAST(bucket // 536870912 AS VARCHAR) || ' GiB'
           END AS key,
           'communication' AS class, dur_ns, busbw_gbps, rank_algbw_gbps AS algbw_gbps
    FROM collective_sizes
    UNION ALL
    SELECT run, phase, rank, name AS key,
           CASE WHEN gpu_self_comm_ns > 0 THEN 'communication' ELSE 'computation' END
             AS class,
           gpu_self_ns AS dur_ns, NULL, NULL
    FROM op_calls
    WHERE key_by = 'op' AND gpu_kernels > 0
    UNION ALL
    SELECT run, phase, rank, '(no op)' AS key, class, dur_ns, NULL, NULL
    FROM op_kernels
    WHERE key_by = 'op' AND op_event_index IS NULL AND dur_ns IS NOT NULL
    UNION ALL
    -- a graph replay's kernels: a call per captured op and launch (_graph_op_time's)
    SELECT run, phase, rank, op_name AS key,
           CASE WHEN max(CASE WHEN class = 'communication' THEN 1 ELSE 0 END) = 1
                THEN 'communication'
                ELSE 'computation' END AS class,
           CAST(sum(coalesce(dur_ns, 0)) AS BIGINT) AS dur_ns, NULL, NULL
    FROM op_kernels
    WHERE key_by = 'op' AND via_capture AND op_event_index IS NOT NULL
    GROUP BY run, phase, rank, trace_id, launch_event_index, op_trace_id, op_event_index,
             op_name
    UNION ALL
    SELECT run, phase, rank, bound_by || ' rank ' || CAST(rank AS VARCHAR) AS key,
           bound_by AS class, ns AS dur_ns, NULL, NULL
    FROM rank_critical_path_breakdown
    WHERE key_by = 'critical_path'
  ) AS k
  JOIN side_ranks AS r ON r.run = k.run AND r.phase = k.phase AND r.rank = k.rank
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
         percentile_disc(0.9) WITHIN GROUP (ORDER BY dur_ns) AS p90_ns,
         percentile_disc(0.5) WITHIN GROUP (ORDER BY busbw_gbps) AS busbw_gbps,
         percentile_disc(0.5) WITHIN GROUP (ORDER BY algbw_gbps) AS algbw_gbps
  FROM chosen
  GROUP BY side, key
),
sides AS (
  SELECT t.side, t.key, s.class, CAST(t.count AS BIGINT) AS count,
         CAST(t.total_ns AS BIGINT) AS total_ns, s.mean_ns, s.p50_ns, s.p90_ns, s.busbw_gbps,
         s.algbw_gbps
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
         b.p90_ns AS base_p90_ns, n.p90_ns AS new_p90_ns,
         b.busbw_gbps AS base_busbw_gbps, n.busbw_gbps AS new_busbw_gbps,
         b.algbw_gbps AS base_algbw_gbps, n.algbw_gbps AS new_algbw_gbps
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
       END AS status,
       base_busbw_gbps, new_busbw_gbps, base_algbw_gbps, new_algbw_gbps
FROM joined
WHERE base_count > 0 OR new_count > 0
ORDER BY abs(new_total_ns - base_total_ns) DESC, name;

CREATE OR REPLACE MACRO run_diff_with(base, new, threshold_pct, min_ns, key_by, phase_filter,
                                      rank_filter) AS TABLE
SELECT * FROM run_phase_diff_with(base, phase_filter, new, phase_filter, threshold_pct, min_ns,
                                  key_by, rank_filter);

CREATE OR REPLACE MACRO run_diff(base, new) AS TABLE
SELECT * FROM run_diff_with(base, new, 5, 10000, 'name', NULL, NULL);
