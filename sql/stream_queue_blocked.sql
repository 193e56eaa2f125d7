-- Time each GPU stream's launch queue was full at a threshold of your choosing: HTA's
-- get_time_spent_blocked_on_full_queue, as a table macro.
--
--   SELECT * FROM stream_queue_blocked(1024)   -- CUDA's default launch queue depth
--
-- Over the rows of `stream_queue` of all the rank's captures: a length held from one change to
-- the next counts when it is at least full_at (HTA's duration_at_max_queue_length; the time
-- after a capture's last change is not counted). Every stream with a launch queue has a row,
-- blocked_ns 0 when its queue never reached full_at (HTA leaves those out, and keeps one
-- stream per rank). blocked_share divides by the stream's own span, from its first change to
-- its last, where HTA divides by the rank's whole trace duration.
--
-- Reads: stream_queue
-- Parameters: full_at BIGINT
--
-- Columns:
--   run, phase, rank   partition
--   stream             GPU stream
--   queue_full_at      the queue length that counts as full (the argument full_at)
--   blocked_ns         time with at least full_at launches waiting, ns
--   span_ns            time from the stream's first change to its last, summed over captures,
--                      ns
--   blocked_share      blocked_ns / span_ns (NULL for a span of 0)
CREATE OR REPLACE MACRO stream_queue_blocked(full_at) AS TABLE
WITH held AS (
  SELECT run, phase, rank, stream, CAST(full_at AS BIGINT) AS queue_full_at,
         coalesce(next_ts_ns - ts_ns, 0) AS held_ns,
         CASE WHEN queue_length >= full_at THEN coalesce(next_ts_ns - ts_ns, 0) ELSE 0 END
           AS blocked_ns
  FROM stream_queue
)
SELECT run, phase, rank, stream, queue_full_at,
       CAST(sum(blocked_ns) AS BIGINT) AS blocked_ns,
       CAST(sum(held_ns) AS BIGINT) AS span_ns,
       CASE WHEN sum(held_ns) > 0 THEN CAST(sum(blocked_ns) AS DOUBLE) / sum(held_ns) END
         AS blocked_share
FROM held
GROUP BY run, phase, rank, stream, queue_full_at;
