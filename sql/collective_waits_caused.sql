-- The wait each rank caused at each matched collective of two or more ranks, in time order:
-- the straggler picture behind `stragglers`, one cell per rank and instance (the report's
-- heat map past a dozen ranks).
--
-- Instances are numbered per run and phase by their first start (ties by process group and
-- seq); a rank's cell is the instance's total wait when it arrived last, else 0.
--
-- Reads: collective_waits
--
-- Columns:
--   run, phase, rank   partition
--   instance           1, 2, ...: the instance's place in time order within the run and phase
--   capture_group      the instance's capture group
--   process_group      its process group
--   seq                its position in the process group
--   collective         the collective
--   arrived_last       true when this rank was the last to start it (the lowest of a tie)
--   wait_caused_ns     the others' waits summed when this rank arrived last, else 0, ns
--   wait_ns            this rank's own wait for the last rank, ns
--   sync_ns            its time inside the kernel beyond the transfer, ns
CREATE OR REPLACE VIEW collective_waits_caused AS
WITH calls AS NOT MATERIALIZED (
  SELECT run, phase, rank, capture_group, process_group, seq, collective, last_rank, wait_ns,
         sync_ns,
         count(*) OVER (PARTITION BY run, phase, capture_group, process_group, seq) AS ranks,
         min(start_ns) OVER (PARTITION BY run, phase, capture_group, process_group, seq)
           AS first_start_ns,
         sum(wait_ns) OVER (PARTITION BY run, phase, capture_group, process_group, seq)
           AS total_wait_ns
  FROM collective_waits
  WHERE matched
)
SELECT run, phase, rank,
       dense_rank() OVER (PARTITION BY run, phase
                          ORDER BY first_start_ns, capture_group, process_group, seq)
         AS instance,
       capture_group, process_group, seq, collective,
       last_rank = rank AS arrived_last,
       CAST(CASE WHEN last_rank = rank THEN total_wait_ns ELSE 0 END AS BIGINT)
         AS wait_caused_ns,
       wait_ns, sync_ns
FROM calls
WHERE ranks > 1;
