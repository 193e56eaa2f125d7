-- Which launch, op, module and annotation each piece of GPU activity (a kernels row, not a
-- gpu_user_annotation range nor a cuda_sync wait) is attributed to, by op_kernels' rules:
-- the launch is the runtime call of the trace with its correlation id (not 0; the earliest,
-- then the first in the file), the op, module and annotation its parents in the cpu_op,
-- module and annotation layers of _host_layers; without an enclosing op, the cpu_op with
-- the activity's External id (not 0; the last started, then the last in the file).
--
-- Built once per trace at ingest (`kernel_ops`, ingest/call_tree.py); a warehouse created
-- before kernel_ops existed replaces this view by sql/live/_kernel_ops.sql, which computes
-- the same rows at query time.
--
-- Reads: kernel_ops
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
SELECT run, phase, rank, trace_id, event_index, launch_event_index, op_event_index,
       module_event_index, annotation_event_index, link
FROM kernel_ops;
