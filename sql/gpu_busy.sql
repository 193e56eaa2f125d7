-- GPU busy time per run, phase and rank: the union of all GPU activity of the rank (all
-- streams pooled), gpu_user_annotation ranges left out since they mark time, not work. From
-- `rank_gpu_time` (lengths measured per trace at ingest).
--
-- Reads: rank_gpu_time
--
-- Columns:
--   run, phase, rank   partition
--   busy_ns            length of the union of kernel, memcpy, memset and sync intervals, ns
--   first_ns           start of the first activity, ns
--   last_ns            end of the last activity, ns
--   span_ns            first to last activity within each capture group, summed: captures
--                      taken at different times do not count the time between them, ns
CREATE OR REPLACE VIEW gpu_busy AS
SELECT run, phase, rank, busy_ns, first_ns, last_ns, span_ns
FROM rank_gpu_time
WHERE first_ns IS NOT NULL;
