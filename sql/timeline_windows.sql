-- The windows a timeline picture can show, per run, phase and rank, and the one the report
-- shows by default: the median window of the slowest rank.
-- Windows are the ProfilerStep#N spans on the CPU when the phase has any; a phase without
-- them (inference captures often have none) has one window per capture, its GPU span. The
-- slowest rank has the longest median window (the nearest-rank lower median; ties: the
-- lowest rank); its median window is the first, by start, of its windows that last that
-- median (ties by trace id, then step).
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
-- One scan of the steps and the capture spans, each figure a window function partitioned by
-- run and phase (or rank), so that a question about a run reads that run's files only: the
-- joins of the windows with their medians, the slowest rank and the pick each read every
-- run's steps again (over 64 ranks of DeepSeek's trace, 0.6x the CPU time).
WITH candidates AS (
  SELECT run, phase, rank, trace_id, event_index AS window_index, name AS step,
         ts_ns AS start_ns, ts_ns + dur_ns AS end_ns
  FROM cpu_ops
  WHERE name LIKE 'ProfilerStep#%' AND dur_ns IS NOT NULL
  UNION ALL
  SELECT run, phase, rank, trace_id, CAST(NULL AS BIGINT), CAST(NULL AS VARCHAR), first_ns,
         last_ns
  FROM capture_spans
),
-- a phase's windows are its steps, or its captures when it has none
windows AS (
  SELECT run, phase, rank, trace_id, window_index, step, start_ns, end_ns,
         end_ns - start_ns AS dur_ns,
         row_number() OVER (PARTITION BY run, phase, rank ORDER BY end_ns - start_ns)
           AS place,
         count(end_ns - start_ns) OVER (PARTITION BY run, phase, rank) AS sized
  FROM (SELECT *, count(step) OVER (PARTITION BY run, phase) AS steps
        FROM candidates) AS phased
  WHERE (step IS NOT NULL) = (steps > 0)
),
-- the nearest-rank lower median: the ceil(n/2)-th shortest of the rank's n windows
medians AS (
  SELECT *,
         max(CASE WHEN 2 * place >= sized AND 2 * place - 2 < sized THEN dur_ns END)
           OVER (PARTITION BY run, phase, rank) AS rank_median_ns
  FROM windows
),
slowest AS (
  SELECT *,
         coalesce(rank = first_value(rank) OVER (PARTITION BY run, phase
                                                ORDER BY rank_median_ns DESC, rank),
                  FALSE) AS slowest_rank
  FROM medians
),
typical AS (
  SELECT *, coalesce(slowest_rank AND dur_ns = rank_median_ns, FALSE) AS typical
  FROM slowest
)
SELECT run, phase, rank, trace_id, window_index, step, start_ns, end_ns, dur_ns,
       rank_median_ns, slowest_rank,
       typical AND row_number() OVER (PARTITION BY run, phase, typical
                                      ORDER BY start_ns, trace_id, window_index) = 1
         AS is_default
FROM typical
-- a capture without a rank counts in its phase's slowest rank but has no window to draw
WHERE rank IS NOT NULL;
