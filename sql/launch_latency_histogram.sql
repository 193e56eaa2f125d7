-- Launch latency histogram per run, phase and rank, in log2 buckets: what the report's
-- launch latency chart draws.
--
-- Bucket b holds latencies l with 2^b <= l < 2^(b+1) ns; latencies of 0 or less (clock
-- offsets between CPU and GPU) have bucket -1 (lower 0, upper 1): `_log2_buckets`'s rule.
--
-- Reads: _log2_buckets
--
-- Columns:
--   run, phase, rank   partition
--   bucket             log2 bucket number (-1 for latencies of 0 or less)
--   lower_ns           smallest latency of the bucket, ns (inclusive)
--   upper_ns           end of the bucket, ns (exclusive)
--   launches           how many launched GPU activities fall in it
CREATE OR REPLACE VIEW launch_latency_histogram AS
SELECT run, phase, rank, bucket, lower_ns, upper_ns, count(*) AS launches
FROM _log2_buckets
WHERE source = 'launch'
GROUP BY run, phase, rank, bucket, lower_ns, upper_ns;
