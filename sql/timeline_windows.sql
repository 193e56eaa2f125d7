-- The windows a timeline picture can show, per run, phase and rank, and the one the report
-- shows by default: the median window of the slowest rank.
-- Windows are the ProfilerStep#N spans on the CPU when the phase has any; a phase without
-- them (inference captures often have none) has one window per capture, its GPU span. The
-- slowest rank has the longest median window (the nearest-rank lower median; ties: the
-- lowest rank); its median window is the first, by start, of its windows that last that
-- median (ties by trace id).
--
-- Reads: cpu_ops, capture_spans
--
-- Columns:
--   run, phase, rank     partition
--   trace_id             the capture holding the window
--   window_index         the step's event_index in cpu_ops (NULL for a whole capture)
--   step                 the step's name, ProfilerStep#N (NULL for a whole capture)
--   start_ns, end_ns     the window: the step on the CPU, or the capture's GPU span, ns
--   dur_ns               end_ns - start_ns, ns
--   rank_median_ns       median dur_ns of the rank's windows, ns
--   slowest_rank         this rank has the phase's longest median window
--   is_default           the window the report draws when none is asked for
CREATE OR REPLACE VIEW timeline_windows AS
WITH steps AS NOT MATERIALIZED (
  SELECT run, phase, rank, trace_id, event_index AS window_index, name AS step,
         ts_ns AS start_ns, ts_ns + dur_ns AS end_ns
  FROM cpu_ops
  WHERE name LIKE 'ProfilerStep#%' AND dur_ns IS NOT NULL
),
stepped AS (
  SELECT DISTINCT run, phase FROM steps
),
windows AS NOT MATERIALIZED (
  SELECT * FROM steps
  UNION ALL
  SELECT c.run, c.phase, c.rank, c.trace_id, CAST(NULL AS BIGINT), CAST(NULL AS VARCHAR),
         c.first_ns, c.last_ns
  FROM capture_spans AS c
  LEFT JOIN stepped AS s ON s.run = c.run AND s.phase = c.phase
  WHERE s.run IS NULL
),
medians AS (
  SELECT run, phase, rank,
         percentile_disc(0.5) WITHIN GROUP (ORDER BY end_ns - start_ns) AS rank_median_ns
  FROM windows
  GROUP BY run, phase, rank
),
slowest AS (
  SELECT run, phase, rank, rank_median_ns
  FROM (SELECT *, row_number() OVER (PARTITION BY run, phase
                                     ORDER BY rank_median_ns DESC, rank) AS place
        FROM medians) AS ordered
  WHERE place = 1
),
picked AS (
  SELECT run, phase, rank, trace_id, window_index
  FROM (SELECT w.run, w.phase, w.rank, w.trace_id, w.window_index,
               row_number() OVER (PARTITION BY w.run, w.phase
                                  ORDER BY w.start_ns, w.trace_id) AS place
        FROM windows AS w
        JOIN slowest AS s
          ON s.run = w.run AND s.phase = w.phase AND s.rank = w.rank
         AND w.end_ns - w.start_ns = s.rank_median_ns) AS ordered
  WHERE place = 1
)
SELECT w.run, w.phase, w.rank, w.trace_id, w.window_index, w.step, w.start_ns, w.end_ns,
       w.end_ns - w.start_ns AS dur_ns, m.rank_median_ns,
       s.rank IS NOT NULL AS slowest_rank,
       p.rank IS NOT NULL AS is_default
FROM windows AS w
JOIN medians AS m ON m.run = w.run AND m.phase = w.phase AND m.rank = w.rank
LEFT JOIN slowest AS s ON s.run = w.run AND s.phase = w.phase AND s.rank = w.rank
LEFT JOIN picked AS p
  ON p.run = w.run AND p.phase = w.phase AND p.rank = w.rank AND p.trace_id = w.trace_id
 AND p.window_index IS NOT DISTINCT FROM w.window_index;
