-- rank_class_intervals computed from the kernels with the effective rules (kernel_classes):
-- used instead of the ingest-time unions when the user's rules change the classes.
-- Columns as in sql/rank_class_intervals.sql.
CREATE OR REPLACE VIEW rank_class_intervals AS
SELECT run, phase, rank,
       CASE WHEN class = 'communication' THEN 'first' ELSE 'second' END AS side,
       ts_ns AS start_ns, ts_ns + dur_ns AS end_ns
FROM kernel_classes
WHERE class IN ('communication', 'computation') AND dur_ns > 0;
