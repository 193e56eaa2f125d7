-- The memory curve: allocated and reserved bytes over time, per trace, process and device,
-- one step per memory event (the level after the event holds until the series' next event).
--
-- A series is one trace's events of one process on one device, in (ts_ns, event_index)
-- order. `running_bytes` is the curve rebuilt from Bytes alone: the first event's Total
-- Allocated minus its Bytes (the level before it), plus every Bytes since. The allocator's
-- totals agree with it when every allocation and free of the device was recorded;
-- `consistent` flags each event where they do not (an event whose Total Allocated is not the
-- previous one's plus its Bytes: events lost, or another process's counters).
--
-- Reads: memory_events
--
-- Columns:
--   run, phase, rank   partition
--   trace_id           the trace
--   pid                the process
--   device_kind        cpu, cuda, hip, xpu, mps, mtia, privateuse1, or the Device Type number
--   device_id          the device (-1: the CPU)
--   seq                position of the event in its series, from 1
--   event_index        the memory event
--   ts_ns              when the step happens, ns
--   next_ts_ns         when the series' next event happens, ns (NULL for the last)
--   bytes              the event's Bytes (> 0 allocated, < 0 freed)
--   allocated_bytes    Total Allocated from ts_ns to next_ts_ns, bytes
--   reserved_bytes     Total Reserved from ts_ns to next_ts_ns, bytes
--   running_bytes      the level Bytes alone give, bytes
--   consistent         true when allocated_bytes is the previous event's plus bytes (true for
--                      the first event of a series)
--   op_event_index     the innermost cpu_op around the event (NULL: none)
--   op_name            that op's name
CREATE OR REPLACE VIEW memory_timeline AS
WITH ordered AS (
  SELECT *,
         row_number() OVER (
           PARTITION BY run, phase, rank, trace_id, pid, device_kind, device_id
           ORDER BY ts_ns, event_index) AS seq,
         lead(ts_ns) OVER (
           PARTITION BY run, phase, rank, trace_id, pid, device_kind, device_id
           ORDER BY ts_ns, event_index) AS next_ts_ns,
         lag(allocated_bytes) OVER (
           PARTITION BY run, phase, rank, trace_id, pid, device_kind, device_id
           ORDER BY ts_ns, event_index) AS previous_allocated_bytes,
         sum(bytes) OVER (
           PARTITION BY run, phase, rank, trace_id, pid, device_kind, device_id
           ORDER BY ts_ns, event_index ROWS UNBOUNDED PRECEDING) AS bytes_so_far,
         first_value(allocated_bytes - bytes) OVER (
           PARTITION BY run, phase, rank, trace_id, pid, device_kind, device_id
           ORDER BY ts_ns, event_index ROWS UNBOUNDED PRECEDING) AS base_bytes
  FROM memory_events
)
SELECT run, phase, rank, trace_id, pid, device_kind, device_id, seq, event_index, ts_ns,
       next_ts_ns, bytes, allocated_bytes, reserved_bytes,
       CAST(base_bytes + bytes_so_far AS BIGINT) AS running_bytes,
       coalesce(allocated_bytes = previous_allocated_bytes + bytes, true) AS consistent,
       op_event_index, op_name
FROM ordered;
