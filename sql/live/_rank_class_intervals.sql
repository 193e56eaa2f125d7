-- _rank_class_intervals computed from the kernels with the effective rules (kernel_classes):
-- used instead of the ingest-time unions when the user's rules change the classes.
--
-- Reads: kernel_classes
--
-- Columns:
--   run, phase, rank     partition
--   side                 first (communication) or second (computation)
--   start_ns, end_ns     an interval, ns
CREATE OR REPLACE VIEW _rank_class_intervals AS
SELECT run, phase, rank,
       CASE WHEN class = 'communication' THEN 'first' ELSE 'second' END AS side,
       ts_ns AS start_ns, ts_ns + dur_ns AS end_ns
FROM kernel_classes
WHERE class IN ('communication', 'computation') AND dur_ns > 0;
