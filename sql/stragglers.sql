-- Which rank made the others wait, per run and phase: how often each rank arrived last at a
-- collective and the wait it caused; the EP/EPLB question in one query.
-- Over the matched instances of two or more ranks (`collective_waits_caused`: one row per rank
-- and instance): a rank is last when it started the call latest (the lowest rank of a tie);
-- the wait it caused is the sum, over the instances where it was last, of every rank's wait.
--
-- Reads: collective_waits_caused
--
-- Columns:
--   run, phase, rank   partition
--   instances          matched instances of two or more ranks the rank took part in
--   times_last         of which it arrived last
--   last_share         times_last / instances (DOUBLE)
--   wait_caused_ns     the others' waits summed over the instances where it was last, ns
--   wait_ns            its own waits summed over its instances, ns
--   sync_ns            its time inside collective kernels beyond the transfer, summed, ns
CREATE OR REPLACE VIEW stragglers AS
SELECT run, phase, rank,
       count(*) AS instances,
       count(CASE WHEN arrived_last THEN 1 END) AS times_last,
       CAST(count(CASE WHEN arrived_last THEN 1 END) AS DOUBLE) / count(*) AS last_share,
       CAST(sum(wait_caused_ns) AS BIGINT) AS wait_caused_ns,
       CAST(sum(wait_ns) AS BIGINT) AS wait_ns,
       CAST(sum(sync_ns) AS BIGINT) AS sync_ns
FROM collective_waits_caused
GROUP BY run, phase, rank;
