-- Statistics of the ranges marked on GPU streams (category gpu_user_annotation: ProfilerStep#N,
-- Optimizer.step, record_function ranges on the GPU) per run, phase, rank and name. They are
-- windows of time, not work, so they are kept out of kernel_stats, kernel_histogram and
-- rank_skew, and of GPU busy time; here is how long they lasted.
--
-- Columns:
--   run, phase, rank   partition
--   name               the annotation
--   count              number of ranges
--   total_ns           sum of their durations, ns (ranges may nest or overlap)
--   mean_ns            mean duration, ns (a fraction)
--   min_ns, max_ns     shortest and longest range, ns
--   p50_ns, p90_ns     duration percentiles (nearest rank: an actual duration), ns
CREATE OR REPLACE VIEW gpu_annotation_stats AS
SELECT run, phase, rank, name,
       count(*) AS count,
       CAST(sum(dur_ns) AS BIGINT) AS total_ns,
       avg(dur_ns) AS mean_ns,
       min(dur_ns) AS min_ns,
       max(dur_ns) AS max_ns,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY dur_ns) AS p50_ns,
       percentile_disc(0.9) WITHIN GROUP (ORDER BY dur_ns) AS p90_ns
FROM kernels
WHERE category = 'gpu_user_annotation'
GROUP BY run, phase, rank, name;
