-- Log2 buckets of GPU work durations and of launch latencies: the one home of the bucket rule
-- that kernel_histogram and launch_latency_histogram group on.
--
-- Bucket b holds values v with 2^b <= v < 2^(b+1) ns; values of 0 or less (zero durations,
-- negative latencies from clock offsets) have bucket -1 (lower 0, upper 1). floor(log2(v)) in
-- floating point can be one off next to a power of two (2^49 - 1 comes out as 49): the guess
-- is corrected against exact integer powers of two.
--
-- Reads: kernel_classes, launch_latency
--
-- Columns:
--   source             kernel (a GPU activity's duration) or launch (its launch latency)
--   run, phase, rank   partition
--   category           category of the GPU activity
--   name               its full name
--   class              its class: communication, computation, memory, sync or other
--   value_ns           the duration or the launch latency, ns
--   bucket             log2 bucket number (-1 for values of 0 or less)
--   lower_ns           smallest value of the bucket, ns (inclusive)
--   upper_ns           end of the bucket, ns (exclusive)
CREATE OR REPLACE VIEW _log2_buckets AS
WITH valued AS (
  SELECT 'kernel' AS source, run, phase, rank, category, name, class, dur_ns AS value_ns
  FROM kernel_classes
  WHERE dur_ns IS NOT NULL AND category <> 'gpu_user_annotation'
  UNION ALL
  SELECT 'launch', run, phase, rank, category, name, class, launch_latency_ns
  FROM launch_latency
),
guessed AS (
  SELECT *,
         CASE WHEN value_ns > 0 THEN CAST(floor(log2(value_ns)) AS BIGINT) ELSE -1 END AS guess
  FROM valued
),
bucketed AS (
  SELECT *,
         CASE
           WHEN guess < 0 THEN -1
           WHEN CAST(pow(2, guess) AS BIGINT) > value_ns THEN guess - 1
           WHEN CAST(pow(2, guess + 1) AS BIGINT) <= value_ns THEN guess + 1
           ELSE guess
         END AS bucket
  FROM guessed
)
SELECT source, run, phase, rank, category, name, class, value_ns, bucket,
       CASE WHEN bucket < 0 THEN 0 ELSE CAST(pow(2, bucket) AS BIGINT) END AS lower_ns,
       CASE WHEN bucket < 0 THEN 1 ELSE CAST(pow(2, bucket + 1) AS BIGINT) END AS upper_ns
FROM bucketed;
