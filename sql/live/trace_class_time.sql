-- trace_class_time when the effective kernel rules are not the defaults: the class lengths
-- measured at ingest do not hold, so none is offered and `rank_gpu_time` merges every rank's
-- live-classified intervals. Columns as in sql/trace_class_time.sql.
CREATE OR REPLACE VIEW trace_class_time AS
SELECT run, phase, rank, trace_id, comm_ns, compute_ns, comm_or_compute_ns
FROM gpu_time
WHERE false;
