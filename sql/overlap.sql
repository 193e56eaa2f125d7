-- Communication/computation overlap per run, phase and rank: how much of the time the GPU
-- spends communicating is hidden under computation.
--
-- All streams of a rank are pooled (HTA's definition, so the figures compare with HTA's);
-- communication and computation are the classes of `kernel_classes`, so DeepEP, NCCL, RCCL
-- and symmetric-memory kernels all count. Every ingested rank has a row, even without
-- kernels. Read from `rank_gpu_time` (union lengths measured per trace at ingest).
--
-- Reads: rank_gpu_time, traces
--
-- Columns:
--   run, phase, rank   partition
--   comm_ns            length of the union of communication kernels, ns
--   compute_ns         length of the union of computation kernels, ns
--   overlap_ns         length of their intersection, ns
--   overlap_ratio      overlap_ns / comm_ns; NULL when there is no communication
--   exposed_comm_ns    communication not hidden under computation: comm_ns - overlap_ns
CREATE OR REPLACE VIEW overlap AS
WITH ranks AS (
  SELECT DISTINCT run, phase, rank FROM traces
)
SELECT
  r.run, r.phase, r.rank,
  coalesce(t.comm_ns, 0) AS comm_ns,
  coalesce(t.compute_ns, 0) AS compute_ns,
  coalesce(t.overlap_ns, 0) AS overlap_ns,
  CASE WHEN t.comm_ns > 0 THEN CAST(t.overlap_ns AS DOUBLE) / t.comm_ns END AS overlap_ratio,
  coalesce(t.comm_ns - t.overlap_ns, 0) AS exposed_comm_ns
FROM ranks AS r
LEFT JOIN rank_gpu_time AS t
  ON t.run = r.run AND t.phase = r.phase AND t.rank = r.rank;
