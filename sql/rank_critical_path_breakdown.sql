-- What each rank's critical path of each step was made of: `rank_critical_path` summed per
-- class (HTA's `get_critical_path_breakdown` grouped by bound_by).
--
-- Reads: rank_critical_path
--
-- Columns:
--   run, phase, rank   partition
--   step               the step, NULL for a trace without steps
--   bound_by           the class of the edges (see rank_critical_path)
--   ns                 their time on the path, ns
--   edges              how many edges
CREATE OR REPLACE VIEW rank_critical_path_breakdown AS
SELECT run, phase, rank, step, bound_by, CAST(sum(ns) AS BIGINT) AS ns, count(*) AS edges
FROM rank_critical_path
GROUP BY run, phase, rank, step, bound_by;
