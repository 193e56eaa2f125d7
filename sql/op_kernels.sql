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
-- Reads: kernel_classes, _kernel_ops, runtime, cpu_ops, _host_layers, graph_replay_kernels
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
own AS (
  -- each activity's attribution in its own trace (built at ingest), and its replay if any
  SELECT k.run, k.phase, k.rank, k.trace_id, k.event_index, k.category, k.name, k.ts_ns,
         k.dur_ns, k.device, k.stream, k.correlation, k.class, a.launch_event_index,
         l.name AS launch, l.tid AS launch_tid, a.op_event_index, a.module_event_index,
         a.annotation_event_index, a.link, g.graph_status, g.capture_phase,
         g.capture_trace_id, g.captured_launch_event_index,
         g.captured_launch_event_index IS NOT NULL AS via_capture
  FROM kernel_classes AS k
  JOIN _kernel_ops AS a
    ON a.run = k.run AND a.phase = k.phase AND a.rank = k.rank AND a.trace_id = k.trace_id
   AND a.event_index = k.event_index
  LEFT JOIN runtime AS l
    ON l.run = k.run AND l.phase = k.phase AND l.rank = k.rank AND l.trace_id = k.trace_id
   AND l.event_index = a.launch_event_index
  LEFT JOIN replays AS g
    ON g.run = k.run AND g.phase = k.phase AND g.rank = k.rank AND g.trace_id = k.trace_id
   AND g.event_index = k.event_index
  WHERE k.category NOT IN ('gpu_user_annotation', 'cuda_sync')
),
placed AS (
  -- where the capture's launches sit
  SELECT run, phase, rank, trace_id, event_index, layer, parent_event_index
  FROM _host_layers
  WHERE source = 'runtime' AND layer IN ('cpu_op', 'module', 'annotation')
),
linked AS (
  SELECT k.run, k.phase, k.rank, k.trace_id, k.event_index, k.category, k.name, k.ts_ns,
         k.dur_ns, k.device, k.stream, k.correlation, k.class, k.launch_event_index,
         k.launch, k.launch_tid, k.via_capture, k.graph_status,
         CASE WHEN k.via_capture THEN k.capture_phase ELSE k.phase END AS op_phase,
         CASE WHEN k.via_capture THEN k.capture_trace_id ELSE k.trace_id END AS op_trace_id,
         CASE WHEN k.via_capture THEN o.parent_event_index
              ELSE k.op_event_index END AS op_event_index,
         CASE WHEN k.via_capture THEN m.parent_event_index
              ELSE k.module_event_index END AS module_event_index,
         CASE WHEN k.via_capture THEN a.parent_event_index
              ELSE k.annotation_event_index END AS annotation_event_index,
         CASE WHEN NOT k.via_capture THEN k.link
              WHEN o.parent_event_index IS NOT NULL THEN 'containment'
              ELSE 'runtime_only' END AS link
  FROM own AS k
  LEFT JOIN placed AS o
    ON k.via_capture AND o.layer = 'cpu_op' AND o.run = k.run AND o.phase = k.capture_phase
   AND o.rank = k.rank AND o.trace_id = k.capture_trace_id
   AND o.event_index = k.captured_launch_event_index
  LEFT JOIN placed AS m
    ON k.via_capture AND m.layer = 'module' AND m.run = k.run AND m.phase = k.capture_phase
   AND m.rank = k.rank AND m.trace_id = k.capture_trace_id
   AND m.event_index = k.captured_launch_event_index
  LEFT JOIN placed AS a
    ON k.via_capture AND a.layer = 'annotation' AND a.run = k.run
   AND a.phase = k.capture_phase AND a.rank = k.rank AND a.trace_id = k.capture_trace_id
   AND a.event_index = k.captured_launch_event_index
),
ops AS (
  SELECT run, phase, rank, trace_id, event_index, name, top_event_index
  FROM _host_layers
  WHERE layer = 'cpu_op' AND member
),
named AS (
  SELECT run, phase, rank, trace_id, event_index, name
  FROM cpu_ops
)
SELECT k.run, k.phase, k.rank, k.trace_id, k.event_index, k.category, k.name, k.ts_ns,
       k.dur_ns, k.device, k.stream, k.correlation, k.class, k.launch_event_index, k.launch,
       k.launch_tid, k.op_event_index, k.op_phase, k.op_trace_id, k.via_capture,
       k.graph_status,
       o.name AS op_name,
       o.top_event_index AS top_op_event_index, t.name AS top_op_name,
       CASE WHEN m.name LIKE 'nn.Module: %' THEN substr(m.name, 12) ELSE m.name END AS module,
       k.module_event_index, a.name AS annotation, k.annotation_event_index, k.link
FROM linked AS k
LEFT JOIN ops AS o
  ON o.run = k.run AND o.phase = k.op_phase AND o.rank = k.rank
 AND o.trace_id = k.op_trace_id AND o.event_index = k.op_event_index
LEFT JOIN named AS t
  ON t.run = k.run AND t.phase = k.op_phase AND t.rank = k.rank
 AND t.trace_id = k.op_trace_id AND t.event_index = o.top_event_index
LEFT JOIN named AS m
  ON m.run = k.run AND m.phase = k.op_phase AND m.rank = k.rank
 AND m.trace_id = k.op_trace_id AND m.event_index = k.module_event_index
LEFT JOIN named AS a
  ON a.run = k.run AND a.phase = k.op_phase AND a.rank = k.rank
 AND a.trace_id = k.op_trace_id AND a.event_index = k.annotation_event_index;
