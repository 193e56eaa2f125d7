-- Duration histogram per run, phase, rank, category and kernel name, in log2 buckets:
-- bucket b holds durations d with 2^b <= d < 2^(b+1) ns; zero durations have bucket -1
-- (lower 0, upper 1). Summing `kernels` over a kernel's buckets gives its number of kernels.
-- GPU work only (like kernel_stats): gpu_user_annotation ranges are left out. The bucket
-- rule is `_log2_buckets`'s.
--
-- Reads: _log2_buckets
--
-- Columns:
--   run, phase, rank   partition
--   category           kernel, gpu_memcpy, gpu_memset, cuda_sync (and vendors' kernel
--                      categories, such as mtia_ccp_events)
--   name               full name
--   class              communication, computation, memory, sync or other
--   bucket             log2 bucket number (-1 for zero durations)
--   lower_ns           smallest duration of the bucket, ns (inclusive)
--   upper_ns           end of the bucket, ns (exclusive)
--   kernels            how many kernels fall in it
--   total_ns           their total duration, ns
CREATE OR REPLACE VIEW kernel_histogram AS
SELECT run, phase, rank, category, name, min(class) AS class, bucket, lower_ns, upper_ns,
       count(*) AS kernels,
       CAST(sum(value_ns) AS BIGINT) AS total_ns
FROM _log2_buckets
WHERE source = 'kernel'
GROUP BY run, phase, rank, category, name, bucket, lower_ns, upper_ns;
