-- Kernel statistics per run, phase, rank, category and full name, over all GPU work: which
-- kernels dominate and how their durations spread (`gpu_activity_stats`, exact). Not here:
-- gpu_user_annotation ranges, which are windows marked on a stream, not work (a ProfilerStep
-- range would rank as the top "kernel" and its busy_share exceed 1); `gpu_annotation_stats`
-- has them.
--
-- Reads: gpu_activity_stats, gpu_busy
--
-- Columns:
--   run, phase, rank   partition
--   category           kernel, gpu_memcpy, gpu_memset, cuda_sync (and vendors' kernel
--                      categories, such as mtia_ccp_events)
--   name               full name
--   short_name         name without parameters and template arguments but the first
--                      template argument's name (`kernel_name_classes`)
--   class              communication, computation, memory, sync or other
--   count              number of executions
--   total_ns           sum of durations, ns
--   mean_ns            mean duration, ns (a fraction)
--   min_ns, max_ns     shortest and longest duration, ns
--   p50_ns, p90_ns, p99_ns   duration percentiles (nearest rank: an actual duration), ns
--   busy_share         total_ns / the rank's GPU busy time (gpu_busy.busy_ns): at most 1 but
--                      for kernels of one name that run at once on several streams
CREATE OR REPLACE VIEW kernel_stats AS
SELECT s.*,
       CASE WHEN b.busy_ns > 0 THEN CAST(s.total_ns AS DOUBLE) / b.busy_ns END AS busy_share
FROM gpu_activity_stats AS s
LEFT JOIN gpu_busy AS b
  ON b.run = s.run AND b.phase = s.phase AND b.rank = s.rank
WHERE s.category <> 'gpu_user_annotation';
