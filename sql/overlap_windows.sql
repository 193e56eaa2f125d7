-- Union lengths of the interval sets of `overlap_intervals`, per window: how long the first
-- set, the second set, and both together cover, and their intersection. Helper of the
-- overlap views.
--
-- The union of a set is measured in one ordered pass: with intervals sorted by start, each
-- adds the part of it past the furthest end seen so far. Integer nanoseconds throughout.
--
-- Columns:
--   run, phase, rank, scope, trace_id, window_index, window_name, window_start_ns,
--   window_end_ns      as in overlap_intervals
--   first_ns           length of the union of the first set
--   second_ns          length of the union of the second set
--   union_ns           length of the union of both
--   overlap_ns         length of their intersection: first_ns + second_ns - union_ns
CREATE OR REPLACE VIEW overlap_windows AS
WITH ordered AS (
  SELECT *,
         max(end_ns) OVER (
           PARTITION BY run, phase, rank, scope, trace_id, window_index, window_name, set_name
           ORDER BY start_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_until
  FROM overlap_intervals
),
lengths AS (
  SELECT run, phase, rank, scope, trace_id, window_index, window_name, window_start_ns,
         window_end_ns, set_name,
         CAST(sum(greatest(0, end_ns - greatest(start_ns, coalesce(covered_until, start_ns))))
              AS BIGINT) AS length_ns
  FROM ordered
  GROUP BY run, phase, rank, scope, trace_id, window_index, window_name, window_start_ns,
           window_end_ns, set_name
),
pivoted AS (
  SELECT run, phase, rank, scope, trace_id, window_index, window_name, window_start_ns,
         window_end_ns,
         CAST(sum(CASE WHEN set_name = 'first' THEN length_ns ELSE 0 END) AS BIGINT) AS first_ns,
         CAST(sum(CASE WHEN set_name = 'second' THEN length_ns ELSE 0 END) AS BIGINT) AS second_ns,
         CAST(sum(CASE WHEN set_name = 'any' THEN length_ns ELSE 0 END) AS BIGINT) AS union_ns
  FROM lengths
  GROUP BY run, phase, rank, scope, trace_id, window_index, window_name, window_start_ns,
           window_end_ns
)
SELECT *, first_ns + second_ns - union_ns AS overlap_ns FROM pivoted;
