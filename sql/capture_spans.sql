-- The GPU span of each capture (trace) of a rank, and the capture group it belongs to: the
-- captures of one rank whose spans overlap in time form one group, and the gaps between groups
-- are not time the GPU spent idle (a rank captured twice, hours or days apart, or a directory
-- of unrelated traces). Idle, span and step figures are measured within a group and summed
-- over groups (`gpu_idle`, `gpu_busy.span_ns`, `run_metrics.gpu_idle_ns`).
--
-- Reads: gpu_time
--
-- Columns:
--   run, phase, rank   partition
--   trace_id           the capture
--   first_ns, last_ns  start of its first and end of its last GPU activity (gpu_user_annotation
--                      ranges left out), ns
--   capture_group      1, 2, ... in time order within the rank: captures overlapping in time
--                      share a group
CREATE OR REPLACE VIEW capture_spans AS
WITH spans AS (
  SELECT run, phase, rank, trace_id, first_ns, last_ns
  FROM gpu_time
  WHERE first_ns IS NOT NULL
),
reached AS (
  SELECT *,
         max(last_ns) OVER (
           PARTITION BY run, phase, rank ORDER BY first_ns, trace_id
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
  FROM spans
)
SELECT run, phase, rank, trace_id, first_ns, last_ns,
       CAST(sum(CASE WHEN reach IS NULL OR first_ns > reach THEN 1 ELSE 0 END) OVER (
         PARTITION BY run, phase, rank ORDER BY first_ns, trace_id
         ROWS UNBOUNDED PRECEDING) AS BIGINT) AS capture_group
FROM reached;
