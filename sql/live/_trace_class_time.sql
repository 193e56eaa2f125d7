-- _trace_class_time when the effective kernel rules are not the defaults: the class lengths
-- measured at ingest do not hold, so none is offered and `rank_gpu_time` merges every rank's
-- live-classified intervals.
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
FROM gpu_time
WHERE false;
