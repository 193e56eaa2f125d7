-- Kernels per run and phase by short name and class, all ranks together, ranked by total
-- time: the report's top kernels.
--
-- Ties in total time are ranked by short name, then class.
--
-- Reads: kernel_stats
--
-- Columns:
--   run, phase         partition
--   short_name         kernel_stats' short name
--   class              communication, computation, memory, sync or other
--   kernels            number of executions over all ranks
--   total_ns           their total duration, ns
--   share_pct          total_ns as a percentage of all kernel time of the run and phase
--   position           1 for the short name and class with the most total time
CREATE OR REPLACE VIEW short_kernel_stats AS
SELECT run, phase, short_name, class,
       CAST(sum(count) AS BIGINT) AS kernels,
       CAST(sum(total_ns) AS BIGINT) AS total_ns,
       100.0 * sum(total_ns) / sum(sum(total_ns)) OVER (PARTITION BY run, phase) AS share_pct,
       row_number() OVER (PARTITION BY run, phase
                          ORDER BY sum(total_ns) DESC, short_name, class) AS position
FROM kernel_stats
GROUP BY run, phase, short_name, class;
