-- What to optimise first: the job's critical path of each step (`critical_path`) summed by
-- the event each edge is attributed to, per rank and class, longest first. A kernel's
-- launch delays have no event and are named NULL.
--
-- Reads: critical_path
--
-- Columns:
--   run, phase   partition
--   step         the step, NULL for traces without steps
--   rank         the rank the time ran on
--   name         the event's name
--   bound_by     the class of the time (see critical_path)
--   ns           its time on the path, ns
CREATE OR REPLACE VIEW critical_path_by_name AS
SELECT run, phase, step, rank, name, bound_by, CAST(sum(ns) AS BIGINT) AS ns
FROM critical_path
GROUP BY run, phase, step, rank, name, bound_by
ORDER BY run, phase, step, ns DESC, rank, name, bound_by;
