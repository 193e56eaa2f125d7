-- Launch queue statistics per rank and GPU stream: HTA's summary of the queue length
-- (get_queue_length_summary), its time-weighted mean and the time spent at the longest queue.
--
-- Over the rows of `stream_queue` of all the rank's captures. The count, mean, standard
-- deviation (sample), minimum, quartiles and maximum are HTA's statistics of the length at
-- each change, unweighted; the quartiles here are actual values (the nearest-rank
-- percentile) where pandas' describe() interpolates between them. The time-weighted figures
-- weigh each length by how long it held, from a capture's first change on a stream to its
-- last (the time after the last change is not counted, as in HTA's
-- get_time_spent_blocked_on_full_queue).
--
-- Reads: stream_queue
--
-- Columns:
--   run, phase, rank              partition
--   stream                        GPU stream
--   changes                       rows of stream_queue: twice the launched activities
--   mean_queue_length             mean length over the changes
--   std_queue_length              its sample standard deviation (NULL for one change)
--   min_queue_length              shortest length
--   p25_queue_length, p50_queue_length, p75_queue_length   quartiles of the length
--   max_queue_length              longest length
--   time_weighted_mean_queue_length   mean length over time
--   span_ns                       time from the first to the last change, summed over
--                                 captures, ns
--   empty_ns                      time within span_ns with nothing waiting (length 0), ns
--   time_at_max_ns                time at the longest length, ns
CREATE OR REPLACE VIEW stream_queue_summary AS
WITH held AS (
  SELECT run, phase, rank, stream, queue_length,
         coalesce(next_ts_ns - ts_ns, 0) AS held_ns,
         max(queue_length) OVER (PARTITION BY run, phase, rank, stream) AS longest
  FROM stream_queue
)
SELECT run, phase, rank, stream,
       count(*) AS changes,
       avg(CAST(queue_length AS DOUBLE)) AS mean_queue_length,
       stddev_samp(CAST(queue_length AS DOUBLE)) AS std_queue_length,
       min(queue_length) AS min_queue_length,
       percentile_disc(0.25) WITHIN GROUP (ORDER BY queue_length) AS p25_queue_length,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY queue_length) AS p50_queue_length,
       percentile_disc(0.75) WITHIN GROUP (ORDER BY queue_length) AS p75_queue_length,
       max(queue_length) AS max_queue_length,
       CASE WHEN sum(held_ns) > 0
            THEN CAST(sum(queue_length * held_ns) AS DOUBLE) / sum(held_ns) END
         AS time_weighted_mean_queue_length,
       CAST(sum(held_ns) AS BIGINT) AS span_ns,
       CAST(sum(CASE WHEN queue_length = 0 THEN held_ns ELSE 0 END) AS BIGINT) AS empty_ns,
       CAST(sum(CASE WHEN queue_length = longest THEN held_ns ELSE 0 END) AS BIGINT)
         AS time_at_max_ns
FROM held
GROUP BY run, phase, rank, stream;
