-- Which operator, module and annotation launched each piece of GPU activity: one row per
-- kernel, memcpy, memset or other vendor's device activity (mtia_ccp_events), whatever its
-- category (not gpu_user_annotation ranges, not cuda_sync waits).
--
-- The launch is the runtime or driver call of the same trace with the activity's correlation
-- id (the earliest, when several carry it; a CUDA graph launch carries one correlation for
-- all its kernels, which all go to the launch's op). The op is the innermost cpu_op
-- enclosing the launch on its thread (_host_layers, layer cpu_op), top_op the outermost;
-- module the innermost `nn.Module: ...` python_function frame, annotation the innermost
-- user_annotation (ProfilerStep#N is one too). Without an enclosing op, an op of the same
-- trace with the activity's External id (the one started last, then the latest in the file)
-- stands in. Correlation and External ids are never matched across trace_id. The
-- attribution is built once per trace at ingest (_kernel_ops).
--
-- A kernel a graph launch replayed, matched to the launch that captured it
-- (graph_replay_kernels), is placed as that captured launch was: its op, top op, module and
-- annotation are the capture trace's (op_trace_id), via_capture says so. Its launch stays
-- the graph launch (launch_event_index, launch, launch_tid: the CPU time is the graph
-- launch's).
--
-- Reads: _kernel_attribution, kernel_name_classes, graph_replay_kernels, _host_layers,
--   cpu_ops
--
-- Columns:
--   run, phase, rank        partition
--   trace_id                the trace
--   event_index             the GPU activity's event in kernels
--   category                kernel, gpu_memcpy, gpu_memset, mtia_ccp_events...
--   name                    its name
--   ts_ns                   start on the GPU, ns
--   dur_ns                  duration, ns (NULL when it has none)
--   device, stream          where it ran
--   correlation             its correlation id
--   class                   communication, computation, memory or other (kernel rules)
--   launch_event_index      the launch's event in runtime (NULL: no launch in the trace)
--   launch                  the launch's name (cudaLaunchKernel, cudaGraphLaunch, ...)
--   launch_tid              the thread that launched it
--   op_event_index          the cpu_op it is attributed to (NULL: none), in op_trace_id
--   op_phase, op_trace_id   the phase and trace holding op_event_index,
--                           top_op_event_index, module_event_index and
--                           annotation_event_index: phase and trace_id, or for a kernel
--                           attributed through a capture the capture's
--   via_capture             true when attributed through the launch that captured it
--   graph_status            a graph launch's kernels: how the launch was matched to a
--                           captured graph (matched, partial, unmatched; see
--                           graph_replay_kernels); NULL for other activity
--   op_name                 that op's name
--   top_op_event_index      the outermost cpu_op enclosing that op (the op itself at top)
--   top_op_name             its name
--   module                  the innermost nn.Module around the launch, without the
--                           `nn.Module: ` prefix (Linear_0)
--   module_event_index      that python_function event
--   annotation              the innermost user_annotation around the launch
--   annotation_event_index  that event
--   link                    containment (an op encloses the launch, or the captured
--                           launch for via_capture), external_id (no
--                           enclosing op; an op with its External id), runtime_only (a
--                           launch, no op) or unlaunched (no launch in the trace, no op)
CREATE OR REPLACE VIEW op_kernels AS
WITH replays AS (
  SELECT run, phase, rank, trace_id, event_index, graph_status, capture_phase,
         capture_trace_id, captured_launch_event_index
  FROM graph_replay_kernels
),
own AS NOT MATERIALIZED (
  -- each activity as its own trace attributes it (built at ingest), its class, its replay
  SELECT a.run, a.phase, a.rank, a.trace_id, a.event_index, a.category, a.name, a.ts_ns,
         a.dur_ns, a.device, a.stream, a.correlation, coalesce(c.class, 'other') AS class,
         a.launch_event_index, a.launch, a.launch_tid, a.op_event_index, a.op_name,
         a.top_op_event_index, a.top_op_name, a.module, a.module_event_index, a.annotation,
         a.annotation_event_index, a.link, g.graph_status, g.capture_phase,
         g.capture_trace_id, g.captured_launch_event_index
  FROM _kernel_attribution AS a
  LEFT JOIN kernel_name_classes AS c
    ON c.run = a.run AND c.category = a.category AND c.name_key = coalesce(a.name_id, 0)
  LEFT JOIN replays AS g
    ON g.run = a.run AND g.phase = a.phase AND g.rank = a.rank AND g.trace_id = a.trace_id
   AND g.event_index = a.event_index
),
captures AS (
  -- the capture traces that replayed activity is attributed through: the host rows below
  -- are read of these traces only (none where no run holds a capture)
  SELECT DISTINCT run, capture_phase AS phase, rank, capture_trace_id AS trace_id
  FROM replays
  WHERE captured_launch_event_index IS NOT NULL
),
layers AS (
  SELECT l.run, l.phase, l.rank, l.trace_id, l.event_index, l.layer, l.source, l.member,
         l.name, l.parent_event_index, l.top_event_index
  FROM _host_layers AS l
  JOIN captures AS c
    ON c.run = l.run AND c.phase = l.phase AND c.rank = l.rank AND c.trace_id = l.trace_id
  WHERE l.layer IN ('cpu_op', 'module', 'annotation')
),
named AS (
  SELECT o.run, o.phase, o.rank, o.trace_id, o.event_index, o.name
  FROM cpu_ops AS o
  JOIN captures AS c
    ON c.run = o.run AND c.phase = o.phase AND c.rank = o.rank AND c.trace_id = o.trace_id
),
placed AS (
  -- where a replayed activity's captured launch sits in its capture
  SELECT k.*, o.parent_event_index AS captured_op, m.parent_event_index AS captured_module,
         a.parent_event_index AS captured_annotation
  FROM own AS k
  LEFT JOIN layers AS o
    ON o.layer = 'cpu_op' AND o.source = 'runtime' AND o.run = k.run
   AND o.phase = k.capture_phase AND o.rank = k.rank AND o.trace_id = k.capture_trace_id
   AND o.event_index = k.captured_launch_event_index
  LEFT JOIN layers AS m
    ON m.layer = 'module' AND m.source = 'runtime' AND m.run = k.run
   AND m.phase = k.capture_phase AND m.rank = k.rank AND m.trace_id = k.capture_trace_id
   AND m.event_index = k.captured_launch_event_index
  LEFT JOIN layers AS a
    ON a.layer = 'annotation' AND a.source = 'runtime' AND a.run = k.run
   AND a.phase = k.capture_phase AND a.rank = k.rank AND a.trace_id = k.capture_trace_id
   AND a.event_index = k.captured_launch_event_index
  WHERE k.captured_launch_event_index IS NOT NULL
)
SELECT run, phase, rank, trace_id, event_index, category, name, ts_ns, dur_ns, device,
       stream, correlation, class, launch_event_index, launch, launch_tid, op_event_index,
       phase AS op_phase, trace_id AS op_trace_id, false AS via_capture, graph_status,
       op_name, top_op_event_index, top_op_name, module, module_event_index, annotation,
       annotation_event_index, link
FROM own
WHERE captured_launch_event_index IS NULL
UNION ALL
-- a replayed activity: placed as the launch that captured it, in the capture's trace
SELECT k.run, k.phase, k.rank, k.trace_id, k.event_index, k.category, k.name, k.ts_ns,
       k.dur_ns, k.device, k.stream, k.correlation, k.class, k.launch_event_index, k.launch,
       k.launch_tid, k.captured_op AS op_event_index, k.capture_phase AS op_phase,
       k.capture_trace_id AS op_trace_id, true AS via_capture, k.graph_status,
       o.name AS op_name, o.top_event_index AS top_op_event_index, t.name AS top_op_name,
       CASE WHEN m.name LIKE 'nn.Module: %' THEN substr(m.name, 12) ELSE m.name END AS module,
       k.captured_module AS module_event_index, a.name AS annotation,
       k.captured_annotation AS annotation_event_index,
       CASE WHEN k.captured_op IS NOT NULL THEN 'containment' ELSE 'runtime_only' END AS link
FROM placed AS k
LEFT JOIN layers AS o
  ON o.layer = 'cpu_op' AND o.member AND o.run = k.run AND o.phase = k.capture_phase
 AND o.rank = k.rank AND o.trace_id = k.capture_trace_id AND o.event_index = k.captured_op
LEFT JOIN named AS t
  ON t.run = k.run AND t.phase = k.capture_phase AND t.rank = k.rank
 AND t.trace_id = k.capture_trace_id AND t.event_index = o.top_event_index
LEFT JOIN named AS m
  ON m.run = k.run AND m.phase = k.capture_phase AND m.rank = k.rank
 AND m.trace_id = k.capture_trace_id AND m.event_index = k.captured_module
LEFT JOIN named AS a
  ON a.run = k.run AND a.phase = k.capture_phase AND a.rank = k.rank
 AND a.trace_id = k.capture_trace_id AND a.event_index = k.captured_annotation;
