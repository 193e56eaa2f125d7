-- Launch latency summed up per run, phase and rank.
--
-- Reads: launch_latency
--
-- Columns:
--   run, phase, rank   partition
--   launches           launched GPU activities with a matching runtime/driver call
--   mean_ns            mean launch latency, ns (a fraction)
--   p50_ns, p90_ns, p99_ns   percentiles (nearest rank), ns
--   max_ns             longest launch latency, ns
--   first_ns           launch latency of the rank's first launch, ns: when it is long, every
--                      later activity queued behind it and the percentiles measure that
--                      queue, not launch overhead (the report warns)
CREATE OR REPLACE VIEW launch_latency_summary AS
SELECT run, phase, rank,
       count(*) AS launches,
       avg(launch_latency_ns) AS mean_ns,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY launch_latency_ns) AS p50_ns,
       percentile_disc(0.9) WITHIN GROUP (ORDER BY launch_latency_ns) AS p90_ns,
       percentile_disc(0.99) WITHIN GROUP (ORDER BY launch_latency_ns) AS p99_ns,
       max(launch_latency_ns) AS max_ns,
       min_by(launch_latency_ns, launch_ts_ns) AS first_ns
FROM launch_latency
GROUP BY run, phase, rank;
