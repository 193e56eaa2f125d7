-- Communication and computation time of each rank as intervals: the unions merged per trace
-- at ingest (`gpu_intervals`), which `rank_gpu_time` merges across a rank's captures when
-- they overlap in time. When the effective
-- kernel rules are not the defaults those were merged with, the query layer replaces this
-- view by sql/live/_rank_class_intervals.sql, which classifies the kernels themselves.
--
-- Reads: gpu_intervals
--
-- Columns:
--   run, phase, rank     partition
--   side                 first (communication) or second (computation)
--   start_ns, end_ns     an interval, ns
CREATE OR REPLACE VIEW _rank_class_intervals AS
SELECT run, phase, rank,
       CASE WHEN kind = 'communication' THEN 'first' ELSE 'second' END AS side,
       start_ns, end_ns
FROM gpu_intervals
WHERE kind IN ('communication', 'computation');
