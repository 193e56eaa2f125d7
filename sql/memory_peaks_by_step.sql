-- The memory peak of each ProfilerStep#N and device: the most bytes allocated (and reserved)
-- at any moment of the step, when it was first reached and the op of the event that set it.
--
-- The curve of memory_timeline, clipped to the step's window on the CPU [start_ns, end_ns):
-- the level the step opens with (set by the series' last event before it) counts, so a step
-- that frees memory has the level it started at as its peak; then that level's moment is the
-- step's start and its op the one of the earlier event that set it. Series are matched to
-- the step's trace; a device's figure is the maximum over the trace's processes. Steps
-- before a device's first memory event have no row for it.
--
-- Reads: memory_timeline, cpu_ops
--
-- Columns:
--   run, phase, rank       partition
--   trace_id               the trace holding the step
--   step_event_index       the step's event in cpu_ops
--   step                   its name (ProfilerStep#N)
--   start_ns, end_ns       the step on the CPU, ns
--   device_kind            cpu, cuda, hip, xpu, mps, mtia, privateuse1, or the Device Type number
--   device_id              the device (-1: the CPU)
--   peak_allocated_bytes   the most Total Allocated during the step, bytes
--   peak_reserved_bytes    the most Total Reserved during the step, bytes
--   peak_ts_ns             when the allocated peak was first reached in the step, ns
--   event_index            the memory event that set that level
--   op_event_index         the innermost cpu_op around that event (NULL: none)
--   op_name                that op's name
--   events                 memory events inside the step
CREATE OR REPLACE VIEW memory_peaks_by_step AS
WITH steps AS (
  SELECT run, phase, rank, trace_id, event_index AS step_event_index, name AS step,
         ts_ns AS start_ns, ts_ns + dur_ns AS end_ns
  FROM cpu_ops
  WHERE name LIKE 'ProfilerStep#%' AND dur_ns IS NOT NULL
),
levels AS (
  SELECT s.run, s.phase, s.rank, s.trace_id, s.step_event_index, s.step, s.start_ns,
         s.end_ns, m.device_kind, m.device_id, m.allocated_bytes, m.reserved_bytes,
         greatest(m.ts_ns, s.start_ns) AS level_ts_ns, m.ts_ns, m.event_index,
         m.op_event_index, m.op_name
  FROM steps AS s
  JOIN memory_timeline AS m
    ON m.run = s.run AND m.phase = s.phase AND m.rank = s.rank AND m.trace_id = s.trace_id
   AND m.ts_ns < s.end_ns AND (m.next_ts_ns IS NULL OR m.next_ts_ns > s.start_ns)
),
ranked AS (
  SELECT *,
         row_number() OVER (
           PARTITION BY run, phase, rank, trace_id, step_event_index, device_kind, device_id
           ORDER BY allocated_bytes DESC, level_ts_ns, event_index) AS place,
         max(reserved_bytes) OVER (
           PARTITION BY run, phase, rank, trace_id, step_event_index, device_kind, device_id)
           AS peak_reserved_bytes,
         sum(CASE WHEN ts_ns >= start_ns THEN 1 ELSE 0 END) OVER (
           PARTITION BY run, phase, rank, trace_id, step_event_index, device_kind, device_id)
           AS events
  FROM levels
)
SELECT run, phase, rank, trace_id, step_event_index, step, start_ns, end_ns, device_kind,
       device_id, allocated_bytes AS peak_allocated_bytes, peak_reserved_bytes,
       level_ts_ns AS peak_ts_ns, event_index, op_event_index, op_name,
       CAST(events AS BIGINT) AS events
FROM ranked
WHERE place = 1;
