-- Each trace's communication and computation time as measured at ingest (`gpu_time`), under
-- the default kernel rules. Helper of `rank_gpu_time`. When the effective rules are not the
-- defaults, the query layer replaces this view by sql/live/_trace_class_time.sql, which holds
-- no rows, so that every rank's classes are merged from live-classified kernels instead.
--
-- Reads: gpu_time
--
-- Columns:
--   run, phase, rank      partition
--   trace_id              the trace
--   comm_ns               length of the union of its communication kernels, ns
--   compute_ns            length of the union of its computation kernels, ns
--   comm_or_compute_ns    length of the union of both, ns
CREATE OR REPLACE VIEW _trace_class_time AS
SELECT run, phase, rank, trace_id, comm_ns, compute_ns, comm_or_compute_ns
FROM gpu_time;
