-- The memory peak of each rank and device: the most bytes the allocator held allocated (and,
-- apart, reserved), when the allocated peak was first reached and the op active then.
--
-- A rank's figure is the maximum over its captures and processes, never a sum (each capture
-- is the same device seen at another time). Peaks are the allocator's totals after each
-- event (Total Allocated, Total Reserved), as PyTorch's memory views report them; the
-- allocated peak's moment is the first event reaching it, ties going to the earlier
-- (ts_ns, trace_id, event_index). Ranks without memory events have no rows. The peak of
-- each ProfilerStep is in memory_peaks_by_step.
--
-- Reads: memory_events
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
WITH totals AS (
  SELECT run, phase, rank, device_kind, device_id,
         max(reserved_bytes) AS peak_reserved_bytes,
         count(*) AS events,
         count(DISTINCT trace_id) AS captures
  FROM memory_events
  GROUP BY run, phase, rank, device_kind, device_id
),
ranked AS (
  SELECT *,
         row_number() OVER (
           PARTITION BY run, phase, rank, device_kind, device_id
           ORDER BY allocated_bytes DESC, ts_ns, trace_id, event_index) AS place
  FROM memory_events
)
SELECT p.run, p.phase, p.rank, p.device_kind, p.device_id,
       p.allocated_bytes AS peak_allocated_bytes, t.peak_reserved_bytes,
       p.ts_ns AS peak_ts_ns, p.trace_id, p.event_index, p.op_event_index, p.op_name,
       t.events, t.captures
FROM ranked AS p
JOIN totals AS t
  ON t.run = p.run AND t.phase = p.phase AND t.rank = p.rank
 AND t.device_kind = p.device_kind AND t.device_id = p.device_id
WHERE p.place = 1;
