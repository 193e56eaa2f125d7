-- GPU time per run, phase and rank as union lengths: busy, communication and computation
-- time and their overlap, all streams pooled. The input of `gpu_busy` and `overlap`.
--
-- Each trace's unions are measured once at ingest (`gpu_time`, `_trace_class_time`). A rank's
-- figures are their sums when the GPU spans of its captures do not overlap in time (one
-- capture per rank, or captures taken one after another). When they do overlap, or when
-- custom kernel rules leave no stored class time, the rank's intervals (`gpu_intervals`,
-- `_rank_class_intervals`) are merged here in one ordered pass, so that time covered twice
-- counts once: each interval adds the part of it past the furthest end seen so far.
--
-- Reads: _rank_class_intervals, _trace_class_time, capture_spans, gpu_intervals, gpu_time
--
-- Columns:
--   run, phase, rank     partition
--   busy_ns              length of the union of GPU activity but gpu_user_annotation, ns
--   first_ns, last_ns    start of the first and end of the last such activity, ns (NULL
--                        when the rank has none)
--   span_ns              time from first to last activity within each capture group
--                        (`capture_spans`), summed over groups: the gaps between captures
--                        taken at different times are left out, ns
--   comm_ns              length of the union of communication kernels, ns
--   compute_ns           length of the union of computation kernels, ns
--   overlap_ns           length of their intersection, ns
CREATE OR REPLACE VIEW rank_gpu_time AS
WITH spans AS NOT MATERIALIZED (
  SELECT run, phase, rank, trace_id, first_ns, last_ns
  FROM gpu_time
  WHERE first_ns IS NOT NULL
),
overlapping_ranks AS (
  SELECT DISTINCT run, phase, rank
  FROM spans AS a
  JOIN spans AS b USING (run, phase, rank)  -- USING: a filter on run reaches both sides
  WHERE a.trace_id < b.trace_id AND a.first_ns < b.last_ns AND b.first_ns < a.last_ns
),
stored AS (
  SELECT g.run, g.phase, g.rank,
         CAST(sum(g.busy_ns) AS BIGINT) AS busy_ns,
         min(g.first_ns) AS first_ns,
         max(g.last_ns) AS last_ns,
         CAST(sum(c.comm_ns) AS BIGINT) AS comm_ns,
         CAST(sum(c.compute_ns) AS BIGINT) AS compute_ns,
         CAST(sum(c.comm_or_compute_ns) AS BIGINT) AS comm_or_compute_ns,
         count(c.trace_id) = count(*) AS classes_stored
  FROM gpu_time AS g
  LEFT JOIN _trace_class_time AS c USING (run, phase, rank, trace_id)  -- a run filter reaches c
  GROUP BY g.run, g.phase, g.rank
),
plan AS NOT MATERIALIZED (
  SELECT s.*, o.rank IS NOT NULL AS overlapping
  FROM stored AS s
  LEFT JOIN overlapping_ranks AS o ON o.run = s.run AND o.phase = s.phase AND o.rank = s.rank
),
to_merge AS (
  SELECT i.run, i.phase, i.rank, 'busy' AS side, i.start_ns, i.end_ns
  FROM gpu_intervals AS i
  JOIN (SELECT run, phase, rank FROM plan WHERE overlapping) AS p
    ON p.run = i.run AND p.phase = i.phase AND p.rank = i.rank
  WHERE i.kind = 'busy'
  UNION ALL
  SELECT c.run, c.phase, c.rank, c.side, c.start_ns, c.end_ns
  FROM _rank_class_intervals AS c
  JOIN (SELECT run, phase, rank FROM plan WHERE overlapping OR NOT classes_stored) AS p
    ON p.run = c.run AND p.phase = c.phase AND p.rank = c.rank
),
ordered AS (
  SELECT *,
         max(CASE WHEN side = 'busy' THEN end_ns END) OVER (
           PARTITION BY run, phase, rank ORDER BY start_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS busy_until,
         max(CASE WHEN side = 'first' THEN end_ns END) OVER (
           PARTITION BY run, phase, rank ORDER BY start_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS first_until,
         max(CASE WHEN side = 'second' THEN end_ns END) OVER (
           PARTITION BY run, phase, rank ORDER BY start_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS second_until,
         max(CASE WHEN side <> 'busy' THEN end_ns END) OVER (
           PARTITION BY run, phase, rank ORDER BY start_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS class_until
  FROM to_merge
),
merged AS (
  SELECT run, phase, rank,
         CAST(sum(CASE WHEN side = 'busy' THEN greatest(0, end_ns - greatest(start_ns,
                  coalesce(busy_until, start_ns))) ELSE 0 END) AS BIGINT) AS busy_ns,
         CAST(sum(CASE WHEN side = 'first' THEN greatest(0, end_ns - greatest(start_ns,
                  coalesce(first_until, start_ns))) ELSE 0 END) AS BIGINT) AS comm_ns,
         CAST(sum(CASE WHEN side = 'second' THEN greatest(0, end_ns - greatest(start_ns,
                  coalesce(second_until, start_ns))) ELSE 0 END) AS BIGINT) AS compute_ns,
         CAST(sum(CASE WHEN side <> 'busy' THEN greatest(0, end_ns - greatest(start_ns,
                  coalesce(class_until, start_ns))) ELSE 0 END) AS BIGINT)
           AS comm_or_compute_ns
  FROM ordered
  GROUP BY run, phase, rank
),
group_spans AS (
  SELECT run, phase, rank, capture_group, max(last_ns) - min(first_ns) AS span_ns
  FROM capture_spans
  GROUP BY run, phase, rank, capture_group
),
rank_spans AS (
  SELECT run, phase, rank, CAST(sum(span_ns) AS BIGINT) AS span_ns
  FROM group_spans
  GROUP BY run, phase, rank
),
chosen AS (
  SELECT p.run, p.phase, p.rank, p.first_ns, p.last_ns, s.span_ns,
         CASE WHEN p.overlapping THEN m.busy_ns ELSE p.busy_ns END AS busy_ns,
         CASE WHEN p.overlapping OR NOT p.classes_stored THEN coalesce(m.comm_ns, 0)
              ELSE p.comm_ns END AS comm_ns,
         CASE WHEN p.overlapping OR NOT p.classes_stored THEN coalesce(m.compute_ns, 0)
              ELSE p.compute_ns END AS compute_ns,
         CASE WHEN p.overlapping OR NOT p.classes_stored THEN coalesce(m.comm_or_compute_ns, 0)
              ELSE p.comm_or_compute_ns END AS comm_or_compute_ns
  FROM plan AS p
  LEFT JOIN merged AS m ON m.run = p.run AND m.phase = p.phase AND m.rank = p.rank
  LEFT JOIN rank_spans AS s ON s.run = p.run AND s.phase = p.phase AND s.rank = p.rank
)
SELECT run, phase, rank, busy_ns, first_ns, last_ns, span_ns, comm_ns, compute_ns,
       comm_ns + compute_ns - comm_or_compute_ns AS overlap_ns
FROM chosen;
