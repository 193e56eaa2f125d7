-- GPU busy time per run, phase and rank: the union of all GPU activity of the rank (all
-- streams pooled), gpu_user_annotation ranges left out since they mark time, not work. Read
-- from the per-trace unions merged at ingest (`gpu_intervals`, kind busy), pooled per rank.
--
-- Columns:
--   run, phase, rank   partition
--   busy_ns            length of the union of kernel, memcpy, memset and sync intervals, ns
--   first_ns           start of the first activity, ns
--   last_ns            end of the last activity, ns
CREATE OR REPLACE VIEW gpu_busy AS
WITH ordered AS (
  SELECT run, phase, rank, start_ns, end_ns,
         max(end_ns) OVER (
           PARTITION BY run, phase, rank ORDER BY start_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_until
  FROM gpu_intervals
  WHERE kind = 'busy'
)
SELECT run, phase, rank,
       CAST(sum(greatest(0, end_ns - greatest(start_ns, coalesce(covered_until, start_ns))))
            AS BIGINT) AS busy_ns,
       min(start_ns) AS first_ns,
       max(end_ns) AS last_ns
FROM ordered
GROUP BY run, phase, rank;
