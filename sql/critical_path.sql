-- The job's critical path of each step over the ranks of a run and phase, one row per path
-- edge in path order. Each rank's own path (`rank_critical_path`) may run through time the
-- rank spent waiting in a collective for another rank to arrive: that time was set by the
-- other rank, not by the work on this path. So on each rank's path the communication kernels
-- of matched collective instances (`collective_waits`) are split at the last rank's arrival
-- into `gpu_communication_wait` (before it) and `gpu_communication_bound` (the transfer after
-- it), and the job's path is the path of the rank whose path is the longest without its
-- waits (the lowest rank of a tie): the rank the others waited for. For a run of one rank,
-- or collectives that are not matched, no time is a wait and the job's path is the longest
-- rank path. The ranks' graphs are not joined edge by edge: the path stays on one rank, and
-- a wait of that rank (for a rank that was late elsewhere) is on it, as a wait.
--
-- Reads: collective_waits, rank_critical_path
--
-- Columns:
--   run, phase         partition
--   step               the step, NULL for traces without steps
--   seq                position of the edge on the path, from 0
--   rank               the rank the edge ran on
--   bound_by           the edge's class (see rank_critical_path), or
--                      gpu_communication_wait: in a collective, before the last rank arrived
--   ns                 time the edge adds to the path, ns
--   start_ns, end_ns   times of the edge's two ends, ns
--   name               the event the edge is attributed to
--   event_table        its table: cpu_ops, runtime or kernels
--   event_id           its event_index in that table
CREATE OR REPLACE VIEW critical_path AS
WITH waits AS (
  SELECT p.run, p.phase, p.rank, p.step, p.seq, least(max(w.wait_ns), p.ns) AS wait_ns
  FROM rank_critical_path AS p
  JOIN collective_waits AS w
    ON w.run = p.run AND w.phase = p.phase AND w.rank = p.rank
   AND w.start_ns = p.start_ns AND w.start_ns + w.dur_ns = p.end_ns
  WHERE p.bound_by = 'gpu_communication_bound' AND p.event_table = 'kernels' AND w.matched
    AND w.wait_ns > 0
  GROUP BY p.run, p.phase, p.rank, p.step, p.seq, p.ns
),
edges AS (
  SELECT p.*, coalesce(w.wait_ns, 0) AS wait_ns
  FROM rank_critical_path AS p
  LEFT JOIN waits AS w
    ON w.run = p.run AND w.phase = p.phase AND w.rank = p.rank AND w.seq = p.seq
   AND w.step IS NOT DISTINCT FROM p.step
),
chosen AS (
  SELECT run, phase, step, rank
  FROM (
    SELECT run, phase, step, rank,
           row_number() OVER (PARTITION BY run, phase, step
                              ORDER BY sum(ns) - sum(wait_ns) DESC, rank) AS place
    FROM edges
    GROUP BY run, phase, step, rank
  ) AS ranked
  WHERE place = 1
),
parts AS (
  SELECT e.run, e.phase, e.step, e.seq, 1 AS part, e.rank,
         CASE WHEN e.wait_ns > 0 THEN 'gpu_communication_bound' ELSE e.bound_by END AS bound_by,
         e.ns - e.wait_ns AS ns, e.start_ns + e.wait_ns AS start_ns, e.end_ns, e.name,
         e.event_table, e.event_id
  FROM edges AS e
  JOIN chosen AS c
    ON c.run = e.run AND c.phase = e.phase AND c.rank = e.rank
   AND c.step IS NOT DISTINCT FROM e.step
  UNION ALL
  SELECT e.run, e.phase, e.step, e.seq, 0 AS part, e.rank, 'gpu_communication_wait',
         e.wait_ns, e.start_ns, e.start_ns + e.wait_ns, e.name, e.event_table, e.event_id
  FROM edges AS e
  JOIN chosen AS c
    ON c.run = e.run AND c.phase = e.phase AND c.rank = e.rank
   AND c.step IS NOT DISTINCT FROM e.step
  WHERE e.wait_ns > 0
)
SELECT run, phase, step,
       row_number() OVER (PARTITION BY run, phase, step ORDER BY seq, part) - 1 AS seq,
       rank, bound_by, ns, start_ns, end_ns, name, event_table, event_id
FROM parts;
