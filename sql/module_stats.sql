-- GPU time per nn.Module path, outer to inner (`Net_0/Encoder_0/Linear_3`), and the time
-- spent outside any module: which part of the model launched the GPU work.
--
-- Modules are the python_function frames named `nn.Module: NAME` (the profiler's
-- with_stack/with_modules call stacks); a module's path is the names of the module frames
-- enclosing it on its thread, outermost first, and its own (_host_ancestors, layer module),
-- joined by `/`. A piece of GPU activity belongs to the innermost module around its launch
-- (op_kernels.module); self time is the activity whose innermost module has this path,
-- total time adds that of the paths below it. Activity with no module around its launch
-- (no launch, no module frames in the trace) is the row with a NULL module_path. Durations
-- are summed (activities running at once on several streams count each). A kernel a graph
-- launch replayed belongs to the module path around the launch that captured it
-- (op_kernels.via_capture), counted in the replay's phase: a call is a captured module frame
-- in one graph launch.
--
-- Reads: _host_layers, _host_ancestors, op_kernels
--
-- Columns:
--   run, phase, rank   partition
--   module_path        the module's path, outer to inner; NULL: outside any module
--   module             the innermost module's name (Linear_3); NULL outside any module
--   depth              number of modules enclosing it (0: outermost)
--   calls              module frames with this path
--   gpu_kernels        GPU activities whose innermost module has this path
--   gpu_self_ns        their durations summed, ns
--   gpu_total_ns       with the activity of the modules inside it, ns
CREATE OR REPLACE VIEW module_stats AS
WITH frames AS (
  SELECT run, phase, rank, trace_id, event_index, depth,
         CASE WHEN name LIKE 'nn.Module: %' THEN substr(name, 12) ELSE name END AS module
  FROM _host_layers
  WHERE layer = 'module' AND member
),
lineage AS (
  SELECT f.run, f.phase, f.rank, f.trace_id, f.event_index, f.depth AS level,
         f.event_index AS ancestor_event_index
  FROM frames AS f
  UNION ALL
  SELECT run, phase, rank, trace_id, event_index, level, ancestor_event_index
  FROM _host_ancestors
  WHERE layer = 'module'
),
paths AS (
  SELECT l.run, l.phase, l.rank, l.trace_id, l.event_index,
         string_agg(a.module, '/' ORDER BY l.level) AS module_path
  FROM lineage AS l
  JOIN frames AS a
    ON a.run = l.run AND a.phase = l.phase AND a.rank = l.rank AND a.trace_id = l.trace_id
   AND a.event_index = l.ancestor_event_index
  GROUP BY l.run, l.phase, l.rank, l.trace_id, l.event_index
),
framed AS (
  SELECT f.*, p.module_path FROM frames AS f
  JOIN paths AS p
    ON p.run = f.run AND p.phase = f.phase AND p.rank = f.rank AND p.trace_id = f.trace_id
   AND p.event_index = f.event_index
),
activity AS (
  SELECT k.run, k.phase, k.rank, k.trace_id, k.module_event_index,
         coalesce(k.dur_ns, 0) AS dur_ns
  FROM op_kernels AS k
  WHERE NOT k.via_capture OR k.module_event_index IS NULL
),
replayed AS (
  -- a replayed kernel's captured module frame and the frames around it, in the capture
  SELECT k.run, k.phase, k.rank, k.op_trace_id, k.launch_event_index, l.ancestor_event_index,
         l.ancestor_event_index = k.module_event_index AS own,
         coalesce(k.dur_ns, 0) AS dur_ns
  FROM op_kernels AS k
  JOIN lineage AS l
    ON l.run = k.run AND l.rank = k.rank AND l.trace_id = k.op_trace_id
   AND l.event_index = k.module_event_index
  WHERE k.via_capture
),
replayed_paths AS (
  SELECT r.run, r.phase, r.rank, f.module_path, min(f.module) AS module,
         min(f.depth) AS depth,
         count(DISTINCT CAST(r.launch_event_index AS VARCHAR) || '/'
                        || CAST(r.ancestor_event_index AS VARCHAR)) AS calls,
         count(CASE WHEN r.own THEN 1 END) AS gpu_kernels,
         CAST(sum(CASE WHEN r.own THEN r.dur_ns ELSE 0 END) AS BIGINT) AS gpu_self_ns,
         CAST(sum(r.dur_ns) AS BIGINT) AS gpu_total_ns
  FROM replayed AS r
  JOIN framed AS f
    ON f.run = r.run AND f.rank = r.rank AND f.trace_id = r.op_trace_id
   AND f.event_index = r.ancestor_event_index
  GROUP BY r.run, r.phase, r.rank, f.module_path
),
own AS (
  SELECT run, phase, rank, trace_id, module_event_index, count(*) AS gpu_kernels,
         CAST(sum(dur_ns) AS BIGINT) AS gpu_self_ns
  FROM activity
  GROUP BY run, phase, rank, trace_id, module_event_index
),
total AS (
  SELECT l.run, l.phase, l.rank, l.trace_id, l.ancestor_event_index AS event_index,
         CAST(sum(o.gpu_self_ns) AS BIGINT) AS gpu_total_ns
  FROM lineage AS l
  JOIN own AS o
    ON o.run = l.run AND o.phase = l.phase AND o.rank = l.rank AND o.trace_id = l.trace_id
   AND o.module_event_index = l.event_index
  GROUP BY l.run, l.phase, l.rank, l.trace_id, l.ancestor_event_index
),
eager AS (
SELECT f.run, f.phase, f.rank, f.module_path, min(f.module) AS module, min(f.depth) AS depth,
       count(*) AS calls, CAST(coalesce(sum(o.gpu_kernels), 0) AS BIGINT) AS gpu_kernels,
       CAST(coalesce(sum(o.gpu_self_ns), 0) AS BIGINT) AS gpu_self_ns,
       CAST(coalesce(sum(t.gpu_total_ns), 0) AS BIGINT) AS gpu_total_ns
FROM framed AS f
LEFT JOIN own AS o
  ON o.run = f.run AND o.phase = f.phase AND o.rank = f.rank AND o.trace_id = f.trace_id
 AND o.module_event_index = f.event_index
LEFT JOIN total AS t
  ON t.run = f.run AND t.phase = f.phase AND t.rank = f.rank AND t.trace_id = f.trace_id
 AND t.event_index = f.event_index
GROUP BY f.run, f.phase, f.rank, f.module_path
UNION ALL
SELECT run, phase, rank, NULL AS module_path, NULL AS module, NULL AS depth,
       0 AS calls, count(*) AS gpu_kernels, CAST(sum(dur_ns) AS BIGINT) AS gpu_self_ns,
       CAST(sum(dur_ns) AS BIGINT) AS gpu_total_ns
FROM activity
WHERE module_event_index IS NULL
GROUP BY run, phase, rank
)
SELECT run, phase, rank, module_path, min(module) AS module, min(depth) AS depth,
       CAST(sum(calls) AS BIGINT) AS calls, CAST(sum(gpu_kernels) AS BIGINT) AS gpu_kernels,
       CAST(sum(gpu_self_ns) AS BIGINT) AS gpu_self_ns,
       CAST(sum(gpu_total_ns) AS BIGINT) AS gpu_total_ns
FROM (SELECT * FROM eager UNION ALL SELECT * FROM replayed_paths) AS m
GROUP BY run, phase, rank, module_path;
