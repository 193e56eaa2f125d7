-- Union lengths of the two sides of `_overlap_intervals`, per window: how long the first side,
-- the second side, and both together cover. Helper of `_overlap_windows` (stream pairs) and
-- of sql/live/_window_time.sql (steps and annotations, when the kernel rules are not the
-- defaults).
--
-- One ordered pass measures all three unions: with intervals sorted by start, each adds the
-- part of it past the furthest end seen so far on its side (and overall). Integer
-- nanoseconds throughout.
--
-- Reads: _overlap_intervals
--
-- Columns:
--   run, phase, rank   partition
--   scope              step, annotation or stream_pair
--   trace_id           the trace holding the window (NULL for stream pairs)
--   window_index       the window's event in cpu_ops (NULL for stream pairs)
--   window_name        the step or annotation name; the two streams, comma-separated
--   window_start_ns, window_end_ns   the window on the CPU, ns (NULL for stream pairs)
--   first_ns           length of the union of the first side
--   second_ns          length of the union of the second side
--   union_ns           length of the union of both
CREATE OR REPLACE VIEW _overlap_lengths AS
WITH ordered AS (
  SELECT *,
         max(CASE WHEN side = 'first' THEN end_ns END) OVER (
           PARTITION BY run, phase, rank, scope, trace_id, window_index, window_name
           ORDER BY start_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS first_until,
         max(CASE WHEN side = 'second' THEN end_ns END) OVER (
           PARTITION BY run, phase, rank, scope, trace_id, window_index, window_name
           ORDER BY start_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS second_until,
         max(end_ns) OVER (
           PARTITION BY run, phase, rank, scope, trace_id, window_index, window_name
           ORDER BY start_ns, end_ns
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS any_until
  FROM _overlap_intervals
)
SELECT run, phase, rank, scope, trace_id, window_index, window_name, window_start_ns,
       window_end_ns,
       CAST(sum(CASE WHEN side = 'first' THEN greatest(0, end_ns - greatest(start_ns,
                coalesce(first_until, start_ns))) ELSE 0 END) AS BIGINT) AS first_ns,
       CAST(sum(CASE WHEN side = 'second' THEN greatest(0, end_ns - greatest(start_ns,
                coalesce(second_until, start_ns))) ELSE 0 END) AS BIGINT) AS second_ns,
       CAST(sum(greatest(0, end_ns - greatest(start_ns, coalesce(any_until, start_ns))))
            AS BIGINT) AS union_ns
FROM ordered
GROUP BY run, phase, rank, scope, trace_id, window_index, window_name, window_start_ns,
         window_end_ns;
