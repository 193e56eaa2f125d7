-- The allocator's memory events: one row per `[memory]` instant of a trace captured with
-- profile_memory=True (PyTorch's caching allocator records one per allocation and free).
--
-- Fields come from the event's args: `Bytes` (positive for an allocation, negative for a
-- free), `Total Allocated` and `Total Reserved` (the allocator's totals for the device just
-- after the event), `Device Type` (c10::DeviceType: 0 cpu, 1 cuda, 6 hip, 12 xpu, 13 mps,
-- 19 mtia, 20 privateuse1; any other type is kept as its number, `device_kind` '8'),
-- `Device Id` (-1 for the CPU) and `Addr`. Event order is (ts_ns, event_index). A trace
-- without memory events gives no rows.
--
-- Reads: instants, cpu_ops
--
-- Columns:
--   run, phase, rank   partition
--   trace_id           the trace
--   event_index        the instant's position in the trace
--   ts_ns              when, ns
--   pid, tid           process and thread that allocated or freed
--   device_type        Device Type as written (c10::DeviceType number)
--   device_kind        cpu, cuda, hip, xpu, mps, mtia, privateuse1, else the number as text
--   device_id          Device Id (-1: the CPU)
--   addr               Addr, the block's address
--   bytes              Bytes: size allocated (> 0) or freed (< 0), bytes
--   allocated_bytes    Total Allocated on the device after the event, bytes
--   reserved_bytes     Total Reserved by the allocator on the device after the event, bytes
--   op_event_index     the innermost cpu_op enclosing the event on its thread (NULL: none)
--   op_name            that op's name: the op active when the memory was allocated or freed
CREATE OR REPLACE VIEW memory_events AS
WITH parsed AS (
  SELECT run, phase, rank, trace_id, event_index, ts_ns, pid, tid,
         CAST(json_extract_string(args, '$."Device Type"') AS INTEGER) AS device_type,
         CAST(json_extract_string(args, '$."Device Id"') AS INTEGER) AS device_id,
         CAST(json_extract_string(args, '$.Addr') AS BIGINT) AS addr,
         CAST(json_extract_string(args, '$.Bytes') AS BIGINT) AS bytes,
         CAST(json_extract_string(args, '$."Total Allocated"') AS BIGINT) AS allocated_bytes,
         CAST(json_extract_string(args, '$."Total Reserved"') AS BIGINT) AS reserved_bytes
  FROM instants
  WHERE name = '[memory]'
),
enclosing AS (
  SELECT m.run, m.phase, m.rank, m.trace_id, m.event_index, o.event_index AS op_event_index,
         o.name AS op_name,
         row_number() OVER (
           PARTITION BY m.run, m.phase, m.rank, m.trace_id, m.event_index
           ORDER BY o.ts_ns DESC, o.dur_ns, o.event_index DESC) AS place
  FROM parsed AS m
  JOIN cpu_ops AS o
    ON o.run = m.run AND o.phase = m.phase AND o.rank = m.rank AND o.trace_id = m.trace_id
   AND o.pid = m.pid AND o.tid = m.tid AND o.category = 'cpu_op'
   AND o.ts_ns <= m.ts_ns AND m.ts_ns < o.ts_ns + o.dur_ns
)
SELECT m.run, m.phase, m.rank, m.trace_id, m.event_index, m.ts_ns, m.pid, m.tid, m.device_type,
       CASE m.device_type
         WHEN 0 THEN 'cpu' WHEN 1 THEN 'cuda' WHEN 6 THEN 'hip' WHEN 12 THEN 'xpu'
         WHEN 13 THEN 'mps' WHEN 19 THEN 'mtia' WHEN 20 THEN 'privateuse1'
         ELSE CAST(m.device_type AS VARCHAR)
       END AS device_kind,
       m.device_id, m.addr, m.bytes, m.allocated_bytes, m.reserved_bytes, e.op_event_index,
       e.op_name
FROM parsed AS m
LEFT JOIN enclosing AS e
  ON e.run = m.run AND e.phase = m.phase AND e.rank = m.rank AND e.trace_id = m.trace_id
 AND e.event_index = m.event_index AND e.place = 1;
