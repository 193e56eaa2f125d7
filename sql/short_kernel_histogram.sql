-- Duration histograms by kernel short name, all ranks together, with the short name's rank by
-- total time: the report's histograms of the top kernels.
--
-- A short name's class is the least of its names' classes (by name); its position ranks short
-- names by total time, ties by short name.
--
-- Reads: kernel_histogram, kernel_stats
--
-- Columns:
--   run, phase         partition
--   position           1 for the short name with the most total time
--   short_name         kernel_stats' short name
--   class              communication, computation, memory, sync or other
--   lower_ns           smallest duration of the bucket, ns (inclusive)
--   upper_ns           end of the bucket, ns (exclusive)
--   kernels            executions of kernels of the short name in the bucket, all ranks
CREATE OR REPLACE VIEW short_kernel_histogram AS
WITH named AS (
  SELECT run, phase, short_name, min(class) AS class, sum(total_ns) AS total_ns
  FROM kernel_stats
  GROUP BY run, phase, short_name
),
ranked AS (
  SELECT *, row_number() OVER (PARTITION BY run, phase
                               ORDER BY total_ns DESC, short_name) AS position
  FROM named
),
names AS (
  SELECT DISTINCT run, phase, name, short_name FROM kernel_stats
)
SELECT r.run, r.phase, r.position, r.short_name, r.class, h.lower_ns, h.upper_ns,
       CAST(sum(h.kernels) AS BIGINT) AS kernels
FROM kernel_histogram AS h
JOIN names AS n ON n.run = h.run AND n.phase = h.phase AND n.name = h.name
JOIN ranked AS r ON r.run = n.run AND r.phase = n.phase AND r.short_name = n.short_name
GROUP BY r.run, r.phase, r.position, r.short_name, r.class, h.lower_ns, h.upper_ns;
