-- The kernel_histogram rolled up per class: how the durations of all communication (or
-- computation, memory...) kernels of a rank spread over the log2 buckets.
--
-- Reads: kernel_histogram
--
-- Columns:
--   run, phase, rank   partition
--   class              communication, computation, memory, sync or other
--   bucket             log2 bucket number (-1 for zero durations)
--   lower_ns           smallest duration of the bucket, ns (inclusive)
--   upper_ns           end of the bucket, ns (exclusive)
--   kernels            how many kernels of the class fall in the bucket
--   total_ns           their total duration, ns
CREATE OR REPLACE VIEW kernel_class_histogram AS
SELECT run, phase, rank, class, bucket, lower_ns, upper_ns,
       CAST(sum(kernels) AS BIGINT) AS kernels,
       CAST(sum(total_ns) AS BIGINT) AS total_ns
FROM kernel_histogram
GROUP BY run, phase, rank, class, bucket, lower_ns, upper_ns;
