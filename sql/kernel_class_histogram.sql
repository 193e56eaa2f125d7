-- The kernel_histogram rolled up per class: how the durations of all communication (or
-- computation, memory...) kernels of a rank spread over the log2 buckets.
--
-- Columns:
--   run, phase, rank   partition
--   class              communication, computation, memory, sync or other
--   bucket, lower_ns, upper_ns   as in kernel_histogram
--   kernels            how many kernels of the class fall in the bucket
--   total_ns           their total duration, ns
CREATE OR REPLACE VIEW kernel_class_histogram AS
SELECT run, phase, rank, class, bucket, lower_ns, upper_ns,
       CAST(sum(kernels) AS BIGINT) AS kernels,
       CAST(sum(total_ns) AS BIGINT) AS total_ns
FROM kernel_histogram
GROUP BY run, phase, rank, class, bucket, lower_ns, upper_ns;
