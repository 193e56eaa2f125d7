-- The job's critical path of each step over the ranks of a run and phase, one row per path
-- edge in path order. For a run with one rank it is that rank's path (`rank_critical_path`).
-- For several ranks it is, for now, the path of the rank whose path is the longest in the
-- step (the lowest rank of a tie): the ranks' graphs are not yet joined at their
-- collectives, so a wait for another rank is still part of the communication time here.
--
-- Reads: rank_critical_path
--
-- Columns:
--   run, phase         partition
--   step               the step, NULL for traces without steps
--   seq                position of the edge on the path, from 0
--   rank               the rank the edge ran on
--   bound_by           the edge's class (see rank_critical_path)
--   ns                 time the edge adds to the path, ns
--   start_ns, end_ns   times of the edge's two nodes, ns
--   name               the event the edge is attributed to
--   event_table        its table: cpu_ops, runtime or kernels
--   event_id           its event_index in that table
CREATE OR REPLACE VIEW critical_path AS
WITH lengths AS (
  SELECT run, phase, step, rank, sum(ns) AS path_ns
  FROM rank_critical_path
  GROUP BY run, phase, step, rank
),
chosen AS (
  SELECT run, phase, step, rank
  FROM (
    SELECT run, phase, step, rank,
           row_number() OVER (PARTITION BY run, phase, step
                              ORDER BY path_ns DESC, rank) AS place
    FROM lengths
  ) AS ranked
  WHERE place = 1
)
SELECT p.run, p.phase, p.step, p.seq, p.rank, p.bound_by, p.ns, p.start_ns, p.end_ns,
       p.name, p.event_table, p.event_id
FROM rank_critical_path AS p
JOIN chosen AS c
  ON c.run = p.run AND c.phase = p.phase AND c.rank = p.rank
 AND c.step IS NOT DISTINCT FROM p.step;
