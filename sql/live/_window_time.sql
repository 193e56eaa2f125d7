-- _window_time computed from the kernels with the effective rules: the step and annotation
-- windows' union lengths of `_overlap_lengths`, used instead of those measured at ingest when
-- the user's rules change the classes.
--
-- Reads: _overlap_lengths
--
-- Columns:
--   run, phase, rank   partition
--   scope              step or annotation
--   trace_id           the trace holding the window
--   window_index       the window's event in cpu_ops
--   window_name        the step or annotation name
--   window_start_ns, window_end_ns   the window on the CPU, ns
--   first_ns           length of the union of the communication kernels launched in it
--   second_ns          length of the union of the computation kernels launched in it
--   union_ns           length of the union of both
CREATE OR REPLACE VIEW _window_time AS
SELECT run, phase, rank, scope, trace_id, window_index, window_name, window_start_ns,
       window_end_ns, first_ns, second_ns, union_ns
FROM _overlap_lengths
WHERE scope IN ('step', 'annotation');
