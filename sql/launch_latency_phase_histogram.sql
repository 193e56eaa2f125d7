-- launch_latency_histogram over all the ranks of a run and phase (the report's launch latency
-- chart).
--
-- Reads: launch_latency_histogram
--
-- Columns:
--   run, phase         the run and phase (all its ranks)
--   bucket             log2 bucket number (-1 for latencies of 0 or less)
--   lower_ns           smallest latency of the bucket, ns (inclusive)
--   upper_ns           end of the bucket, ns (exclusive)
--   launches           how many launched GPU activities fall in it, all ranks
CREATE OR REPLACE VIEW launch_latency_phase_histogram AS
SELECT run, phase, bucket, lower_ns, upper_ns,
       CAST(sum(launches) AS BIGINT) AS launches
FROM launch_latency_histogram
GROUP BY run, phase, bucket, lower_ns, upper_ns;
