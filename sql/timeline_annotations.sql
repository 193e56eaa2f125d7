-- User annotations of each timeline window (`timeline_windows`), placed on the GPU: the span
-- from the first start to the last end of the GPU work each annotation instance launched
-- (DualPipe's attn(F), dispatch(F)... over the kernels they issued), which the report draws
-- above the streams. An annotation belongs to a step when it starts in it; GPU work belongs
-- to the annotation when its launch call (its own start, without one) falls in the
-- annotation. ProfilerStep#N spans are the windows themselves and are not listed; an
-- annotation that launched no GPU work has no row.
--
-- Reads: cpu_ops, kernel_launches, timeline_windows
--
-- Columns:
--   run, phase, rank     partition
--   trace_id             the capture
--   window_index         the window's step event_index in cpu_ops (NULL for a whole
--                        capture)
--   event_index          the annotation's event in cpu_ops
--   name                 the annotation
--   cpu_start_ns, cpu_end_ns   the annotation on the CPU, ns
--   start_ns, end_ns     first start and last end of the GPU work it launched, ns
--   kernels              how many GPU activities it launched
CREATE OR REPLACE VIEW timeline_annotations AS
WITH annotations AS NOT MATERIALIZED (
  SELECT run, phase, rank, trace_id, event_index, name, ts_ns AS cpu_start_ns,
         ts_ns + dur_ns AS cpu_end_ns
  FROM cpu_ops
  WHERE category = 'user_annotation' AND name NOT LIKE 'ProfilerStep#%' AND dur_ns IS NOT NULL
),
placed AS (
  SELECT a.run, a.phase, a.rank, a.trace_id, a.event_index, a.name, a.cpu_start_ns,
         a.cpu_end_ns, min(k.ts_ns) AS start_ns, max(k.ts_ns + k.dur_ns) AS end_ns,
         count(*) AS kernels
  FROM annotations AS a
  JOIN kernel_launches AS k
    ON k.run = a.run AND k.phase = a.phase AND k.rank = a.rank AND k.trace_id = a.trace_id
   AND coalesce(k.launch_ts_ns, k.ts_ns) >= a.cpu_start_ns
   AND coalesce(k.launch_ts_ns, k.ts_ns) < a.cpu_end_ns
  WHERE k.category <> 'gpu_user_annotation' AND k.dur_ns IS NOT NULL
  GROUP BY a.run, a.phase, a.rank, a.trace_id, a.event_index, a.name, a.cpu_start_ns,
           a.cpu_end_ns
)
SELECT p.run, p.phase, p.rank, p.trace_id, w.window_index, p.event_index, p.name,
       p.cpu_start_ns, p.cpu_end_ns, p.start_ns, p.end_ns, p.kernels
FROM placed AS p
JOIN timeline_windows AS w
  ON w.run = p.run AND w.phase = p.phase AND w.rank = p.rank AND w.trace_id = p.trace_id
 AND (w.window_index IS NULL
      OR (p.cpu_start_ns >= w.start_ns AND p.cpu_start_ns < w.end_ns));
