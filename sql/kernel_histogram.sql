-- Duration histogram per run, phase, rank, category and kernel name, in log2 buckets:
-- bucket b holds durations d with 2^b <= d < 2^(b+1) ns; zero durations have bucket -1
-- (lower 0, upper 1). Summing `kernels` over a kernel's buckets gives its number of kernels.
-- GPU work only, as in kernel_stats: gpu_user_annotation ranges are left out.
--
-- Columns:
--   run, phase, rank, category, name, class   as in kernel_stats
--   bucket             log2 bucket number (-1 for zero durations)
--   lower_ns           smallest duration of the bucket, ns (inclusive)
--   upper_ns           end of the bucket, ns (exclusive)
--   kernels            how many kernels fall in it
--   total_ns           their total duration, ns
CREATE OR REPLACE VIEW kernel_histogram AS
WITH guessed AS (
  SELECT run, phase, rank, category, name, class, dur_ns,
         CASE WHEN dur_ns > 0 THEN CAST(floor(log2(dur_ns)) AS BIGINT) ELSE -1 END AS guess
  FROM kernel_classes
  WHERE dur_ns IS NOT NULL AND category <> 'gpu_user_annotation'
),
bucketed AS (
  -- floor(log2(d)) in floating point can be one off next to a power of two: correct it.
  SELECT *,
         CASE
           WHEN guess < 0 THEN -1
           WHEN CAST(pow(2, guess) AS BIGINT) > dur_ns THEN guess - 1
           WHEN CAST(pow(2, guess + 1) AS BIGINT) <= dur_ns THEN guess + 1
           ELSE guess
         END AS bucket
  FROM guessed
)
SELECT run, phase, rank, category, name, min(class) AS class, bucket,
       CASE WHEN bucket < 0 THEN 0 ELSE CAST(pow(2, bucket) AS BIGINT) END AS lower_ns,
       CASE WHEN bucket < 0 THEN 1 ELSE CAST(pow(2, bucket + 1) AS BIGINT) END AS upper_ns,
       count(*) AS kernels,
       CAST(sum(dur_ns) AS BIGINT) AS total_ns
FROM bucketed
GROUP BY run, phase, rank, category, name, bucket;
