-- _kernel_ops computed from the call tree, where the rows built at ingest (kernel_ops) do
-- not exist: the warehouse was created before kernel_ops existed.
--
-- Which launch, op, module and annotation each piece of GPU activity (a kernels row, not a
-- gpu_user_annotation range nor a cuda_sync wait) is attributed to, by op_kernels' rules:
-- the launch is the runtime call of the trace with its correlation id (not 0; the earliest,
-- then the first in the file), the op, module and annotation its parents in the cpu_op,
-- module and annotation layers of _host_layers; without an enclosing op, the cpu_op with
-- the activity's External id (not 0; the last started, then the last in the file).
--
-- Reads: kernels, runtime, cpu_ops, _host_layers
--
-- Columns:
--   run, phase, rank         partition
--   trace_id                 the trace
--   event_index              the GPU activity's event in kernels
--   launch_event_index       the launch's event in runtime (NULL: no launch in the trace)
--   op_event_index           the cpu_op it is attributed to (NULL: none)
--   module_event_index       the innermost nn.Module frame around the launch
--   annotation_event_index   the innermost user_annotation around the launch
--   link                     containment, external_id, runtime_only or unlaunched
CREATE OR REPLACE VIEW _kernel_ops AS
WITH launches AS (
  SELECT run, phase, rank, trace_id, correlation, event_index AS launch_event_index
  FROM (SELECT *, row_number() OVER (
                    PARTITION BY run, phase, rank, trace_id, correlation
                    ORDER BY ts_ns, event_index) AS nth
        FROM runtime
        WHERE correlation IS NOT NULL AND correlation <> 0) AS r
  WHERE nth = 1
),
placed AS (
  SELECT run, phase, rank, trace_id, event_index, layer, parent_event_index,
         top_event_index
  FROM _host_layers
  WHERE source = 'runtime' AND layer IN ('cpu_op', 'module', 'annotation')
),
external_ops AS (
  SELECT run, phase, rank, trace_id, external_id, event_index AS op_event_index
  FROM (SELECT *, row_number() OVER (
                    PARTITION BY run, phase, rank, trace_id, external_id
                    ORDER BY ts_ns DESC, event_index DESC) AS nth
        FROM cpu_ops
        WHERE category = 'cpu_op' AND external_id IS NOT NULL AND external_id <> 0) AS c
  WHERE nth = 1
)
SELECT k.run, k.phase, k.rank, k.trace_id, k.event_index, l.launch_event_index,
       coalesce(o.parent_event_index, x.op_event_index) AS op_event_index,
       m.parent_event_index AS module_event_index,
       a.parent_event_index AS annotation_event_index,
       CASE WHEN o.parent_event_index IS NOT NULL THEN 'containment'
            WHEN x.op_event_index IS NOT NULL THEN 'external_id'
            WHEN l.launch_event_index IS NOT NULL THEN 'runtime_only'
            ELSE 'unlaunched' END AS link
FROM kernels AS k
LEFT JOIN launches AS l
  ON l.run = k.run AND l.phase = k.phase AND l.rank = k.rank AND l.trace_id = k.trace_id
 AND l.correlation = k.correlation
LEFT JOIN placed AS o
  ON o.layer = 'cpu_op' AND o.run = k.run AND o.phase = k.phase AND o.rank = k.rank
 AND o.trace_id = k.trace_id AND o.event_index = l.launch_event_index
LEFT JOIN placed AS m
  ON m.layer = 'module' AND m.run = k.run AND m.phase = k.phase AND m.rank = k.rank
 AND m.trace_id = k.trace_id AND m.event_index = l.launch_event_index
LEFT JOIN placed AS a
  ON a.layer = 'annotation' AND a.run = k.run AND a.phase = k.phase AND a.rank = k.rank
 AND a.trace_id = k.trace_id AND a.event_index = l.launch_event_index
LEFT JOIN external_ops AS x
  ON o.parent_event_index IS NULL AND x.run = k.run AND x.phase = k.phase
 AND x.rank = k.rank AND x.trace_id = k.trace_id AND x.external_id = k.external_id
WHERE k.category NOT IN ('gpu_user_annotation', 'cuda_sync');
