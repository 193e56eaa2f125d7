-- Kernel intervals grouped for the overlap views: one row per interval, per window it counts
-- in, per set. Helper of `overlap_windows`; rarely queried directly.
--
-- Scopes and their windows:
--   rank         the whole rank (all streams pooled, HTA's definition)
--   step         each ProfilerStep#N instance on the CPU, every step kept
--   annotation   each other user-annotation instance (DualPipe's attn(F), mlp(B)...)
--   stream_pair  each pair of GPU streams of a rank
-- A kernel belongs to a step or annotation window when the runtime call that launched it (its
-- own start, if it has no launch) falls in the window. Sets: for rank, step and annotation,
-- `first` holds communication kernels and `second` computation kernels; for stream_pair, the
-- kernels (communication or computation) of the first and of the second stream. Set `any`
-- holds both.
--
-- Columns:
--   run, phase, rank    partition
--   scope               rank, step, annotation or stream_pair
--   trace_id            the trace of the window (NULL for rank and stream_pair)
--   window_index        event_index of the step or annotation (NULL for rank, stream_pair)
--   window_name         step or annotation name; 'A,B' streams for stream_pair
--   window_start_ns     start of the window (NULL for rank and stream_pair)
--   window_end_ns       end of the window (NULL for rank and stream_pair)
--   set_name            first, second or any
--   start_ns, end_ns    the kernel interval, ns
CREATE OR REPLACE VIEW overlap_intervals AS
WITH intervals AS (
  SELECT run, phase, rank, trace_id, stream, class,
         ts_ns AS start_ns, ts_ns + dur_ns AS end_ns,
         coalesce(launch_ts_ns, ts_ns) AS anchor_ns
  FROM kernel_launches
  WHERE class IN ('communication', 'computation') AND dur_ns > 0
),
windows AS (
  SELECT run, phase, rank, trace_id, event_index AS window_index, name AS window_name,
         ts_ns AS window_start_ns, ts_ns + dur_ns AS window_end_ns,
         CASE WHEN name LIKE 'ProfilerStep#%' THEN 'step' ELSE 'annotation' END AS scope
  FROM cpu_ops
  WHERE (name LIKE 'ProfilerStep#%' OR category = 'user_annotation') AND dur_ns IS NOT NULL
),
streams AS (
  SELECT DISTINCT run, phase, rank, stream FROM intervals WHERE stream IS NOT NULL
),
stream_pairs AS (
  SELECT a.run, a.phase, a.rank, a.stream AS first_stream, b.stream AS second_stream
  FROM streams AS a
  JOIN streams AS b
    ON a.run = b.run AND a.phase = b.phase AND a.rank = b.rank AND a.stream < b.stream
),
scoped AS (
  SELECT run, phase, rank, 'rank' AS scope, CAST(NULL AS VARCHAR) AS trace_id,
         CAST(NULL AS BIGINT) AS window_index, CAST(NULL AS VARCHAR) AS window_name,
         CAST(NULL AS BIGINT) AS window_start_ns, CAST(NULL AS BIGINT) AS window_end_ns,
         CASE WHEN class = 'communication' THEN 'first' ELSE 'second' END AS set_name,
         start_ns, end_ns
  FROM intervals
  UNION ALL
  SELECT w.run, w.phase, w.rank, w.scope, w.trace_id, w.window_index, w.window_name,
         w.window_start_ns, w.window_end_ns,
         CASE WHEN i.class = 'communication' THEN 'first' ELSE 'second' END,
         i.start_ns, i.end_ns
  FROM intervals AS i
  JOIN windows AS w
    ON w.run = i.run AND w.phase = i.phase AND w.rank = i.rank AND w.trace_id = i.trace_id
   AND i.anchor_ns >= w.window_start_ns AND i.anchor_ns < w.window_end_ns
  UNION ALL
  SELECT p.run, p.phase, p.rank, 'stream_pair', CAST(NULL AS VARCHAR), CAST(NULL AS BIGINT),
         CAST(p.first_stream AS VARCHAR) || ',' || CAST(p.second_stream AS VARCHAR),
         CAST(NULL AS BIGINT), CAST(NULL AS BIGINT),
         CASE WHEN i.stream = p.first_stream THEN 'first' ELSE 'second' END,
         i.start_ns, i.end_ns
  FROM intervals AS i
  JOIN stream_pairs AS p
    ON p.run = i.run AND p.phase = i.phase AND p.rank = i.rank
   AND (i.stream = p.first_stream OR i.stream = p.second_stream)
)
SELECT * FROM scoped
UNION ALL
SELECT run, phase, rank, scope, trace_id, window_index, window_name, window_start_ns,
       window_end_ns, 'any', start_ns, end_ns
FROM scoped;
