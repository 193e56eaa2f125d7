-- Allocations and frees paired by address: how long each block lived and the op that
-- allocated it.
--
-- Per trace, process, device and address, in (ts_ns, event_index) order, an allocation
-- (Bytes > 0) pairs with the next event at that address when it is a free (Bytes < 0).
-- Nothing is dropped: an allocation with no such free is `not_freed` (alive at the end of
-- the capture, or its free not recorded), and a free with no allocation before it is
-- `allocated_before` (the block came from before the capture; its allocation columns are
-- NULL). Events with Bytes 0 pair with nothing and are left out.
--
-- Reads: memory_events
--
-- Columns:
--   run, phase, rank     partition
--   trace_id             the trace
--   pid                  the process
--   device_kind          cpu, cuda, hip, xpu, mps, mtia, privateuse1, or the Device Type number
--   device_id            the device (-1: the CPU)
--   addr                 the block's address
--   bytes                its size, bytes
--   status               freed, not_freed or allocated_before
--   alloc_event_index    the allocation's memory event (NULL: allocated_before)
--   alloc_ts_ns          when it was allocated, ns
--   free_event_index     the free's memory event (NULL: not_freed)
--   free_ts_ns           when it was freed, ns
--   lifetime_ns          free_ts_ns - alloc_ts_ns (NULL unless freed)
--   op_event_index       the innermost cpu_op around the allocation (NULL: none or unknown)
--   op_name              that op's name: the allocating op
CREATE OR REPLACE VIEW memory_allocations AS
WITH ordered AS (
  SELECT *,
         lead(bytes) OVER address AS next_bytes,
         lead(event_index) OVER address AS next_event_index,
         lead(ts_ns) OVER address AS next_ts_ns,
         lag(bytes) OVER address AS previous_bytes
  FROM memory_events
  WHERE bytes <> 0
  WINDOW address AS (PARTITION BY run, phase, rank, trace_id, pid, device_kind, device_id, addr
                     ORDER BY ts_ns, event_index)
)
SELECT run, phase, rank, trace_id, pid, device_kind, device_id, addr, bytes,
       CASE WHEN next_bytes < 0 THEN 'freed' ELSE 'not_freed' END AS status,
       event_index AS alloc_event_index, ts_ns AS alloc_ts_ns,
       CASE WHEN next_bytes < 0 THEN next_event_index END AS free_event_index,
       CASE WHEN next_bytes < 0 THEN next_ts_ns END AS free_ts_ns,
       CASE WHEN next_bytes < 0 THEN next_ts_ns - ts_ns END AS lifetime_ns,
       op_event_index, op_name
FROM ordered
WHERE bytes > 0
UNION ALL
SELECT run, phase, rank, trace_id, pid, device_kind, device_id, addr, -bytes,
       'allocated_before', CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), event_index, ts_ns,
       CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS VARCHAR)
FROM ordered
WHERE bytes < 0 AND (previous_bytes IS NULL OR previous_bytes < 0);
