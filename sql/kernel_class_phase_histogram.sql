-- kernel_class_histogram over all the ranks of a run and phase: how the durations of each
-- class's kernels spread over the log2 buckets (the report's histograms per class).
--
-- Reads: kernel_class_histogram
--
-- Columns:
--   run, phase         the run and phase (all its ranks)
--   class              communication, computation, memory, sync or other
--   bucket             log2 bucket number (-1 for zero durations)
--   lower_ns           smallest duration of the bucket, ns (inclusive)
--   upper_ns           end of the bucket, ns (exclusive)
--   kernels            how many kernels of the class fall in the bucket, all ranks
--   total_ns           their total duration, ns
CREATE OR REPLACE VIEW kernel_class_phase_histogram AS
SELECT run, phase, class, bucket, lower_ns, upper_ns,
       CAST(sum(kernels) AS BIGINT) AS kernels,
       CAST(sum(total_ns) AS BIGINT) AS total_ns
FROM kernel_class_histogram
GROUP BY run, phase, class, bucket, lower_ns, upper_ns;
