-- The capture group of each capture (trace) for matching collectives across ranks: one
-- profiler window as every rank of a run and phase saw it.
-- Captures of any rank of a run and phase whose GPU spans overlap in time, chained, form one
-- window (ranks profiled by the same schedule capture the same steps at about the same
-- time; cycles of a schedule, or runs captured hours apart, are separate windows). Within a
-- window, a rank's own capture groups (`capture_spans`: its captures that overlap each other)
-- are numbered in time order, and the n-th of every rank is one capture group: so traces
-- whose clocks all start near zero, which would all overlap, are still matched n-th with
-- n-th, never a capture of one rank with two of another's.
--
-- Reads: capture_spans
--
-- Columns:
--   run, phase, rank   partition
--   trace_id           the capture
--   capture_group      1, 2, ... in time order within the run and phase: the captures
--                      whose collectives are matched with each other
CREATE OR REPLACE VIEW _collective_captures AS
WITH reached AS NOT MATERIALIZED (
  SELECT run, phase, rank, trace_id, first_ns, capture_group AS rank_group,
         max(last_ns) OVER (
           PARTITION BY run, phase ORDER BY first_ns, rank, trace_id
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
  FROM capture_spans
),
windows AS NOT MATERIALIZED (
  SELECT run, phase, rank, trace_id, rank_group,
         sum(CASE WHEN reach IS NULL OR first_ns > reach THEN 1 ELSE 0 END) OVER (
           PARTITION BY run, phase ORDER BY first_ns, rank, trace_id
           ROWS UNBOUNDED PRECEDING) AS window_number
  FROM reached
),
ordinals AS NOT MATERIALIZED (
  SELECT run, phase, rank, trace_id, window_number,
         dense_rank() OVER (PARTITION BY run, phase, rank, window_number
                            ORDER BY rank_group) AS ordinal
  FROM windows
)
SELECT run, phase, rank, trace_id,
       dense_rank() OVER (PARTITION BY run, phase ORDER BY window_number, ordinal)
         AS capture_group
FROM ordinals;
