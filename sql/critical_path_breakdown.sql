-- What the job's critical path of each step was made of: `critical_path` summed per class,
-- with each class's share of the path.
--
-- Reads: critical_path
--
-- Columns:
--   run, phase   partition
--   step         the step, NULL for traces without steps
--   bound_by     the class of the edges (see critical_path)
--   ns           their time on the path, ns
--   share        ns / the path's length (DOUBLE, 0..1); NULL for a path of length 0
CREATE OR REPLACE VIEW critical_path_breakdown AS
WITH classes AS (
  SELECT run, phase, step, bound_by, CAST(sum(ns) AS BIGINT) AS ns
  FROM critical_path
  GROUP BY run, phase, step, bound_by
)
SELECT run, phase, step, bound_by, ns,
       ns / CAST(nullif(sum(ns) OVER (PARTITION BY run, phase, step), 0) AS DOUBLE) AS share
FROM classes;
