-- op_kernels' rows as each trace gives them: every piece of GPU activity (a kernels row, not
-- a gpu_user_annotation range nor a cuda_sync wait) with its own columns, its launch and the
-- op, top op, module and annotation it is attributed to (_kernel_ops' rules), names
-- included.
--
-- Built once per trace at ingest (`kernel_attribution`, ingest/call_tree.py), so that
-- op_kernels over many ranks is a scan per trace rather than six joins over every event; a
-- warehouse created before kernel_attribution existed replaces this view by
-- sql/live/_kernel_attribution.sql, which joins the same rows at query time.
--
-- Reads: kernel_attribution
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
SELECT run, phase, rank, trace_id, event_index, category, name, name_id, ts_ns, dur_ns,
       device, stream, correlation, launch_event_index, launch, launch_tid, op_event_index,
       op_name, top_op_event_index, top_op_name, module_event_index, module,
       annotation_event_index, annotation, link
FROM kernel_attribution;
