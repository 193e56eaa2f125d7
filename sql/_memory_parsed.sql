-- The allocator's memory events as written: one row per `[memory]` instant, its args parsed,
-- without the op around it. Helper of memory_events and memory_peaks (which ranks events
-- first and looks up the op of its peak rows only: the op lookup is the costly part).
--
-- Fields come from the event's args: `Bytes` (positive for an allocation, negative for a
-- free), `Total Allocated` and `Total Reserved` (the allocator's totals for the device just
-- after the event), `Device Type` (c10::DeviceType: 0 cpu, 1 cuda, 6 hip, 12 xpu, 13 mps,
-- 19 mtia, 20 privateuse1; any other type is kept as its number, `device_kind` '8'),
-- `Device Id` (-1 for the CPU) and `Addr`.
--
-- Reads: instants
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
CREATE OR REPLACE VIEW _memory_parsed AS
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
)
SELECT run, phase, rank, trace_id, event_index, ts_ns, pid, tid, device_type,
       CASE device_type
         WHEN 0 THEN 'cpu' WHEN 1 THEN 'cuda' WHEN 6 THEN 'hip' WHEN 12 THEN 'xpu'
         WHEN 13 THEN 'mps' WHEN 19 THEN 'mtia' WHEN 20 THEN 'privateuse1'
         ELSE CAST(device_type AS VARCHAR)
       END AS device_kind,
       device_id, addr, bytes, allocated_bytes, reserved_bytes
FROM parsed;
