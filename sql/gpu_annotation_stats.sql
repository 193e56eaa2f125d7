-- Statistics of the ranges marked on GPU streams (category gpu_user_annotation: ProfilerStep#N,
-- Optimizer.step, record_function ranges on the GPU) per run, phase, rank and name. They are
-- windows of time, not work, so they are kept out of kernel_stats, kernel_histogram and
-- rank_skew, and of GPU busy time; here is how long they lasted.
--
-- Reads: gpu_activity_stats
--
-- Columns:
--   run, phase, rank   partition
--   name               the annotation
--   count              number of ranges
--   total_ns           sum of their durations, ns (ranges may nest or overlap)
--   mean_ns            mean duration, ns (a fraction)
--   min_ns, max_ns     shortest and longest range, ns
--   p50_ns, p90_ns, p99_ns   duration percentiles (nearest rank: an actual duration), ns
CREATE OR REPLACE VIEW gpu_annotation_stats AS
SELECT run, phase, rank, name, count, total_ns, mean_ns, min_ns, max_ns, p50_ns, p90_ns, p99_ns
FROM gpu_activity_stats
WHERE category = 'gpu_user_annotation';
