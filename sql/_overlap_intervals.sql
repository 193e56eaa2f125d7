-- Kernel intervals grouped for the overlap views: one row per interval and window it counts
-- in. Helper of `_overlap_lengths`; rarely queried directly.
--
-- Scopes and their windows (the whole-rank figures are in `rank_gpu_time`):
--   step         each ProfilerStep#N instance on the CPU, every step kept
--   annotation   each other user-annotation instance (DualPipe's attn(F), mlp(B)...)
--   stream_pair  each pair of GPU streams of a rank
-- A kernel belongs to a step or annotation window when the runtime call that launched it (its
-- own start, if it has no launch) falls in the window. Sides: for step and annotation,
-- `first` is communication and `second` computation; for stream_pair, the kernels
-- (communication or computation) of the first and of the second stream.
--
-- Reads: cpu_ops, kernel_classes, kernel_launches
--
-- Columns:
--   run, phase, rank    partition
--   scope               step, annotation or stream_pair
--   trace_id            the trace of the window (NULL for stream_pair)
--   window_index        event_index of the step or annotation (NULL for stream_pair)
--   window_name         step or annotation name; 'A,B' streams for stream_pair
--   window_start_ns     start of the window (NULL for stream_pair)
--   window_end_ns       end of the window (NULL for stream_pair)
--   side                first or second
--   start_ns, end_ns    the kernel interval, ns
--
-- Steps and annotations are windows of one join, each of a branch whose scope is a constant:
-- a filter on `scope` then prunes the branches of the other scopes before any kernel is read
-- (a scope derived from the name reached the cpu_ops scan, but the kernels and their launches
-- were read and grouped for the join even when it found no window: ~4 s over 64 ranks, for
-- every stream-pair question).
CREATE OR REPLACE VIEW _overlap_intervals AS
SELECT w.run, w.phase, w.rank, w.scope, w.trace_id, w.window_index, w.window_name,
       w.window_start_ns, w.window_end_ns,
       CASE WHEN k.class = 'communication' THEN 'first' ELSE 'second' END AS side,
       k.ts_ns AS start_ns, k.ts_ns + k.dur_ns AS end_ns
FROM kernel_launches AS k
JOIN (
  SELECT run, phase, rank, trace_id, 'step' AS scope, event_index AS window_index,
         name AS window_name, ts_ns AS window_start_ns, ts_ns + dur_ns AS window_end_ns
  FROM cpu_ops
  WHERE name LIKE 'ProfilerStep#%' AND dur_ns IS NOT NULL
  UNION ALL
  SELECT run, phase, rank, trace_id, 'annotation', event_index, name, ts_ns, ts_ns + dur_ns
  FROM cpu_ops
  WHERE category = 'user_annotation' AND (name IS NULL OR name NOT LIKE 'ProfilerStep#%')
    AND dur_ns IS NOT NULL
) AS w
  ON w.run = k.run AND w.phase = k.phase AND w.rank = k.rank AND w.trace_id = k.trace_id
 AND coalesce(k.launch_ts_ns, k.ts_ns) >= w.window_start_ns
 AND coalesce(k.launch_ts_ns, k.ts_ns) < w.window_end_ns
WHERE k.class IN ('communication', 'computation') AND k.dur_ns > 0
UNION ALL
SELECT k.run, k.phase, k.rank, 'stream_pair', CAST(NULL AS VARCHAR), CAST(NULL AS BIGINT),
       CAST(p.first_stream AS VARCHAR) || ',' || CAST(p.second_stream AS VARCHAR),
       CAST(NULL AS BIGINT), CAST(NULL AS BIGINT),
       CASE WHEN k.stream = p.first_stream THEN 'first' ELSE 'second' END,
       k.ts_ns, k.ts_ns + k.dur_ns
FROM kernel_classes AS k
JOIN (
  SELECT a.run, a.phase, a.rank, a.stream AS first_stream, b.stream AS second_stream
  FROM (SELECT DISTINCT run, phase, rank, stream FROM kernel_classes
        WHERE stream IS NOT NULL AND class IN ('communication', 'computation')) AS a
  JOIN (SELECT DISTINCT run, phase, rank, stream FROM kernel_classes
        WHERE stream IS NOT NULL AND class IN ('communication', 'computation')) AS b
    ON a.run = b.run AND a.phase = b.phase AND a.rank = b.rank AND a.stream < b.stream
) AS p
  ON p.run = k.run AND p.phase = k.phase AND p.rank = k.rank
 AND (k.stream = p.first_stream OR k.stream = p.second_stream)
WHERE k.class IN ('communication', 'computation') AND k.dur_ns > 0;
