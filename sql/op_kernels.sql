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
-- Reads: kernel_classes, _kernel_ops, runtime, cpu_ops, _host_layers
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
--   op_event_index          the cpu_op it is attributed to (NULL: none)
--   op_name                 that op's name
--   top_op_event_index      the outermost cpu_op enclosing that op (the op itself at top)
--   top_op_name             its name
--   module                  the innermost nn.Module around the launch, without the
--                           `nn.Module: ` prefix (Linear_0)
--   module_event_index      that python_function event
--   annotation              the innermost user_annotation around the launch
--   annotation_event_index  that event
--   link                    containment (an op encloses the launch), external_id (no
--                           enclosing op; an op with its External id), runtime_only (a
--                           launch, no op) or unlaunched (no launch in the trace, no op)
CREATE OR REPLACE VIEW op_kernels AS
WITH linked AS (
  SELECT k.run, k.phase, k.rank, k.trace_id, k.event_index, k.category, k.name, k.ts_ns,
         k.dur_ns, k.device, k.stream, k.correlation, k.class, a.launch_event_index,
         l.name AS launch, l.tid AS launch_tid, a.op_event_index, a.module_event_index,
         a.annotation_event_index, a.link
  FROM kernel_classes AS k
  JOIN _kernel_ops AS a
    ON a.run = k.run AND a.phase = k.phase AND a.rank = k.rank AND a.trace_id = k.trace_id
   AND a.event_index = k.event_index
  LEFT JOIN runtime AS l
    ON l.run = k.run AND l.phase = k.phase AND l.rank = k.rank AND l.trace_id = k.trace_id
   AND l.event_index = a.launch_event_index
  WHERE k.category NOT IN ('gpu_user_annotation', 'cuda_sync')
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
       k.launch_tid, k.op_event_index, o.name AS op_name,
       o.top_event_index AS top_op_event_index, t.name AS top_op_name,
       CASE WHEN m.name LIKE 'nn.Module: %' THEN substr(m.name, 12) ELSE m.name END AS module,
       k.module_event_index, a.name AS annotation, k.annotation_event_index, k.link
FROM linked AS k
LEFT JOIN ops AS o
  ON o.run = k.run AND o.phase = k.phase AND o.rank = k.rank AND o.trace_id = k.trace_id
 AND o.event_index = k.op_event_index
LEFT JOIN named AS t
  ON t.run = k.run AND t.phase = k.phase AND t.rank = k.rank AND t.trace_id = k.trace_id
 AND t.event_index = o.top_event_index
LEFT JOIN named AS m
  ON m.run = k.run AND m.phase = k.phase AND m.rank = k.rank AND m.trace_id = k.trace_id
 AND m.event_index = k.module_event_index
LEFT JOIN named AS a
  ON a.run = k.run AND a.phase = k.phase AND a.rank = k.rank AND a.trace_id = k.trace_id
 AND a.event_index = k.annotation_event_index;
