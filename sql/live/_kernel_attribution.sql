-- _kernel_attribution joined at query time, where the rows built at ingest
-- (kernel_attribution) do not exist: the warehouse was created before kernel_attribution
-- existed.
--
-- op_kernels' rows as each trace gives them: every piece of GPU activity (a kernels row, not
-- a gpu_user_annotation range nor a cuda_sync wait) with its own columns, its launch and the
-- op, top op, module and annotation it is attributed to (_kernel_ops' rules), names
-- included.
--
-- Reads: kernels, _kernel_ops, runtime, cpu_ops, _host_layers
--
-- Columns:
--   run, phase, rank         partition
--   trace_id                 the trace
--   event_index              the GPU activity's event in kernels
--   category, name, name_id, ts_ns, dur_ns, device, stream, correlation   as in kernels
--   launch_event_index       the launch's event in runtime (NULL: no launch in the trace)
--   launch                   the launch's name
--   launch_tid               the thread that launched it
--   op_event_index           the cpu_op it is attributed to (NULL: none)
--   op_name                  that op's name
--   top_op_event_index       the outermost cpu_op enclosing that op (the op itself at top)
--   top_op_name              its name
--   module_event_index       the innermost nn.Module frame around the launch
--   module                   its name without the `nn.Module: ` prefix
--   annotation_event_index   the innermost user_annotation around the launch
--   annotation               its name
--   link                     containment, external_id, runtime_only or unlaunched
CREATE OR REPLACE VIEW _kernel_attribution AS
WITH ops AS (
  SELECT run, phase, rank, trace_id, event_index, name, top_event_index
  FROM _host_layers
  WHERE layer = 'cpu_op' AND member
),
named AS (
  SELECT run, phase, rank, trace_id, event_index, name
  FROM cpu_ops
)
SELECT k.run, k.phase, k.rank, k.trace_id, k.event_index, k.category, k.name, k.name_id,
       k.ts_ns, k.dur_ns, k.device, k.stream, k.correlation, a.launch_event_index,
       l.name AS launch, l.tid AS launch_tid, a.op_event_index, o.name AS op_name,
       o.top_event_index AS top_op_event_index, t.name AS top_op_name,
       a.module_event_index,
       CASE WHEN m.name LIKE 'nn.Module: %' THEN substr(m.name, 12) ELSE m.name END AS module,
       a.annotation_event_index, n.name AS annotation, a.link
FROM kernels AS k
JOIN _kernel_ops AS a
  ON a.run = k.run AND a.phase = k.phase AND a.rank = k.rank AND a.trace_id = k.trace_id
 AND a.event_index = k.event_index
LEFT JOIN runtime AS l
  ON l.run = k.run AND l.phase = k.phase AND l.rank = k.rank AND l.trace_id = k.trace_id
 AND l.event_index = a.launch_event_index
LEFT JOIN ops AS o
  ON o.run = k.run AND o.phase = k.phase AND o.rank = k.rank AND o.trace_id = k.trace_id
 AND o.event_index = a.op_event_index
LEFT JOIN named AS t
  ON t.run = k.run AND t.phase = k.phase AND t.rank = k.rank AND t.trace_id = k.trace_id
 AND t.event_index = o.top_event_index
LEFT JOIN named AS m
  ON m.run = k.run AND m.phase = k.phase AND m.rank = k.rank AND m.trace_id = k.trace_id
 AND m.event_index = a.module_event_index
LEFT JOIN named AS n
  ON n.run = k.run AND n.phase = k.phase AND n.rank = k.rank AND n.trace_id = k.trace_id
 AND n.event_index = a.annotation_event_index
WHERE k.category NOT IN ('gpu_user_annotation', 'cuda_sync');
