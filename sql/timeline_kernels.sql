-- GPU work of each timeline window (`timeline_windows`), one row per activity and window:
-- what the report's timeline picture draws, on its stream, at its GPU time, colored by class.
-- An activity belongs to a step when the runtime call that launched it (its own start, when
-- it has no launch) falls in the step, as in `overlap_by_step`: GPU work runs after the CPU
-- that issued it, so a step's kernels may end past the step. A whole-capture window holds
-- every activity of its capture. gpu_user_annotation ranges are windows, not work, and are
-- left out. The timeline's classes are four: sync and other GPU work are drawn as other.
--
-- Reads: kernel_launches, timeline_windows
--
-- Columns:
--   run, phase, rank     partition
--   trace_id             the capture
--   window_index         the window's step event_index in cpu_ops (NULL for a whole
--                        capture)
--   event_index          the activity's event in kernels
--   stream               its GPU stream (NULL when the trace gives none)
--   name, short_name     its name, and the short name the report shows
--   timeline_class       communication, computation, memory or other
--   start_ns, end_ns     when it ran on the GPU, ns
--   dur_ns               end_ns - start_ns, ns
CREATE OR REPLACE VIEW timeline_kernels AS
SELECT w.run, w.phase, w.rank, w.trace_id, w.window_index, k.event_index, k.stream, k.name,
       k.short_name,
       CASE WHEN k.class IN ('communication', 'computation', 'memory') THEN k.class
            ELSE 'other' END AS timeline_class,
       k.ts_ns AS start_ns, k.ts_ns + k.dur_ns AS end_ns, k.dur_ns
FROM kernel_launches AS k
JOIN timeline_windows AS w
  ON w.run = k.run AND w.phase = k.phase AND w.rank = k.rank AND w.trace_id = k.trace_id
 AND (w.window_index IS NULL
      OR (coalesce(k.launch_ts_ns, k.ts_ns) >= w.start_ns
          AND coalesce(k.launch_ts_ns, k.ts_ns) < w.end_ns))
WHERE k.category <> 'gpu_user_annotation' AND k.dur_ns IS NOT NULL;
