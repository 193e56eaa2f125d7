-- Duration statistics per run, phase, rank, category and full name, over all GPU activity
-- (kernels, memcpy, memset, sync and gpu_user_annotation ranges): the common ground of
-- `kernel_stats` (GPU work) and `gpu_annotation_stats` (annotated windows). Exact: every event
-- counts (no sampling, no top-N cut before aggregating). Events are grouped on their 64-bit
-- name_id and named afterwards from `kernel_name_classes`, so millions of long names are not
-- compared.
--
-- Reads: kernel_name_classes, kernels
--
-- Columns:
--   run, phase, rank   partition
--   category           kernel, gpu_memcpy, gpu_memset, cuda_sync, gpu_user_annotation (and
--                      vendors' kernel categories, such as mtia_ccp_events)
--   name               full name
--   short_name         name without parameters and template arguments but the first
--                      template argument's name (`kernel_name_classes`)
--   class              communication, computation, memory, sync or other
--   count              number of executions
--   total_ns           sum of durations, ns
--   mean_ns            mean duration, ns (a fraction)
--   min_ns, max_ns     shortest and longest duration, ns
--   p50_ns, p90_ns, p99_ns   duration percentiles (nearest rank: an actual duration), ns
CREATE OR REPLACE VIEW gpu_activity_stats AS
WITH stats AS (
  SELECT run, phase, rank, category, coalesce(name_id, 0) AS name_key,
         count(*) AS count,
         CAST(sum(dur_ns) AS BIGINT) AS total_ns,
         avg(dur_ns) AS mean_ns,
         min(dur_ns) AS min_ns,
         max(dur_ns) AS max_ns,
         percentile_disc(0.5) WITHIN GROUP (ORDER BY dur_ns) AS p50_ns,
         percentile_disc(0.9) WITHIN GROUP (ORDER BY dur_ns) AS p90_ns,
         percentile_disc(0.99) WITHIN GROUP (ORDER BY dur_ns) AS p99_ns
  FROM kernels
  GROUP BY run, phase, rank, category, coalesce(name_id, 0)
)
SELECT s.run, s.phase, s.rank, s.category, n.name, n.short_name,
       coalesce(n.class, 'other') AS class, s.count, s.total_ns, s.mean_ns, s.min_ns,
       s.max_ns, s.p50_ns, s.p90_ns, s.p99_ns
FROM stats AS s
LEFT JOIN kernel_name_classes AS n
  ON n.run = s.run AND n.category = s.category AND n.name_key = s.name_key;
