-- The memory peak of each rank and device: the most bytes the allocator held allocated (and,
-- apart, reserved), when the allocated peak was first reached and the op active then.
--
-- A rank's figure is the maximum over its captures and processes, never a sum (each capture
-- is the same device seen at another time). Peaks are the allocator's totals after each
-- event (Total Allocated, Total Reserved), as PyTorch's memory views report them; the
-- allocated peak's moment is the first event reaching it, ties going to the earlier
-- (ts_ns, trace_id, event_index). Ranks without memory events have no rows. The peak of
-- each ProfilerStep is in memory_peaks_by_step. Events are ranked as parsed and the op (the
-- rule of memory_events: the cpu_op started last among those enclosing the event on its
-- thread) is looked up for the peak rows alone, so a rank's million memory events cost a
-- sort, not a search for the op of each.
--
-- Reads: _memory_parsed, cpu_ops
--
-- Columns:
--   run, phase, rank       partition
--   device_kind            cpu, cuda, hip, xpu, mps, mtia, privateuse1, or the Device Type number
--   device_id              the device (-1: the CPU)
--   peak_allocated_bytes   the most Total Allocated seen, bytes
--   peak_reserved_bytes    the most Total Reserved seen, bytes
--   peak_ts_ns             when the allocated peak was first reached, ns
--   trace_id               the capture holding that moment
--   event_index            the memory event that reached it
--   op_event_index         the innermost cpu_op around that event (NULL: none)
--   op_name                that op's name
--   events                 memory events of the rank on the device
--   captures               traces they come from
CREATE OR REPLACE VIEW memory_peaks AS
WITH events AS (
  SELECT run, phase, rank, trace_id, event_index, ts_ns, pid, tid, device_kind, device_id,
         allocated_bytes, reserved_bytes
  FROM _memory_parsed
),
totals AS (
  SELECT run, phase, rank, device_kind, device_id,
         max(allocated_bytes) AS peak_allocated_bytes,
         max(reserved_bytes) AS peak_reserved_bytes,
         count(*) AS events,
         count(DISTINCT trace_id) AS captures
  FROM events
  GROUP BY run, phase, rank, device_kind, device_id
),
peaks AS (
  SELECT *
  FROM (SELECT e.*,
               row_number() OVER (
                 PARTITION BY e.run, e.phase, e.rank, e.device_kind, e.device_id
                 ORDER BY e.ts_ns, e.trace_id, e.event_index) AS place
        FROM events AS e
        JOIN totals AS t
          ON t.run = e.run AND t.phase = e.phase AND t.rank = e.rank
         AND t.device_kind = e.device_kind AND t.device_id = e.device_id
         AND t.peak_allocated_bytes = e.allocated_bytes) AS reaching
  WHERE place = 1
),
enclosing AS (
  SELECT p.run, p.phase, p.rank, p.trace_id, p.event_index, o.event_index AS op_event_index,
         o.name AS op_name,
         row_number() OVER (
           PARTITION BY p.run, p.phase, p.rank, p.trace_id, p.event_index
           ORDER BY o.ts_ns DESC, o.dur_ns, o.event_index DESC) AS place
  FROM peaks AS p
  JOIN cpu_ops AS o
    ON o.run = p.run AND o.phase = p.phase AND o.rank = p.rank AND o.trace_id = p.trace_id
   AND o.pid = p.pid AND o.tid = p.tid AND o.category = 'cpu_op'
   AND o.ts_ns <= p.ts_ns AND p.ts_ns < o.ts_ns + o.dur_ns
)
SELECT p.run, p.phase, p.rank, p.device_kind, p.device_id,
       p.allocated_bytes AS peak_allocated_bytes, t.peak_reserved_bytes,
       p.ts_ns AS peak_ts_ns, p.trace_id, p.event_index, e.op_event_index, e.op_name,
       t.events, t.captures
FROM peaks AS p
JOIN totals AS t
  ON t.run = p.run AND t.phase = p.phase AND t.rank = p.rank
 AND t.device_kind = p.device_kind AND t.device_id = p.device_id
LEFT JOIN enclosing AS e
  ON e.run = p.run AND e.phase = p.phase AND e.rank = p.rank AND e.trace_id = p.trace_id
 AND e.event_index = p.event_index AND e.place = 1;
