-- Collectives per run, phase, collective, dtype and size: how many, how much time and how
-- close to the hardware's bandwidth they ran.
-- From `collective_instances`: calls and time count every instance; bandwidth percentiles
-- come from the matched instances that have one (nearest-rank percentiles). GB = 10^9
-- bytes.
--
-- Reads: collective_instances
--
-- Columns:
--   run, phase         partition
--   collective         the collective
--   dtype              its dtype, NULL when unknown
--   msg_bytes          its size, bytes (NULL when unknown: DeepEP)
--   instances          instances (one per matched or unmatched call across ranks)
--   matched            of which matched
--   calls              rank calls (instances times the ranks in each)
--   total_bytes        msg_bytes summed over the instances, bytes
--   latency_ns         the matched instances' latencies summed, ns
--   rank_dur_ns        the calls' durations summed over ranks and instances, ns
--   wait_ns            the matched instances' waits summed (total_wait_ns), ns
--   busbw_p50_gbps, busbw_p90_gbps   bus bandwidth percentiles over matched instances, GB/s
--   busbw_min_gbps, busbw_max_gbps   its least and greatest, GB/s
--   algbw_p50_gbps     algorithm bandwidth median, GB/s
CREATE OR REPLACE VIEW collective_summary AS
SELECT run, phase, collective, dtype, msg_bytes,
       count(*) AS instances,
       count(CASE WHEN matched THEN 1 END) AS matched,
       CAST(sum(ranks) AS BIGINT) AS calls,
       CAST(sum(msg_bytes) AS BIGINT) AS total_bytes,
       CAST(sum(latency_ns) AS BIGINT) AS latency_ns,
       CAST(sum(rank_dur_ns) AS BIGINT) AS rank_dur_ns,
       CAST(sum(total_wait_ns) AS BIGINT) AS wait_ns,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY busbw_gbps) AS busbw_p50_gbps,
       percentile_disc(0.9) WITHIN GROUP (ORDER BY busbw_gbps) AS busbw_p90_gbps,
       min(busbw_gbps) AS busbw_min_gbps,
       max(busbw_gbps) AS busbw_max_gbps,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY algbw_gbps) AS algbw_p50_gbps
FROM collective_instances
GROUP BY run, phase, collective, dtype, msg_bytes;
