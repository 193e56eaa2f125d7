-- The allocator's memory events: one row per `[memory]` instant of a trace captured with
-- profile_memory=True (PyTorch's caching allocator records one per allocation and free).
--
-- Fields come from the event's args (see _memory_parsed). Event order is (ts_ns,
-- event_index). A trace without memory events gives no rows.
--
-- The op is the innermost cpu_op enclosing the event on its thread: of the cpu_ops with
-- ts_ns <= the event's ts_ns < their end, the one started last, then the shorter, then the
-- later in the file. It is found by ordered passes over each thread's op starts, op ends and
-- memory events (the call tree's method, see _host_layers, over these events alone): an
-- event's depth is the number of ops open at it, and its op is the last one opened one level
-- up. That is the rule above when the thread's ops nest; a thread where they do not (an op
-- outliving the one it started in) is matched by time containment instead, every event
-- against every op of its thread, so the rule holds whatever the nesting.
--
-- Reads: _memory_parsed, cpu_ops
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
WITH events AS (
  SELECT * FROM _memory_parsed
),
threads AS (
  SELECT DISTINCT run, phase, rank, trace_id, pid, tid FROM events
),
ops AS (
  SELECT o.run, o.phase, o.rank, o.trace_id, o.pid, o.tid, o.event_index, o.ts_ns, o.dur_ns
  FROM cpu_ops AS o
  JOIN threads AS t
    ON t.run = o.run AND t.phase = o.phase AND t.rank = o.rank AND t.trace_id = o.trace_id
   AND t.pid = o.pid AND t.tid = o.tid
  WHERE o.category = 'cpu_op' AND o.dur_ns > 0
),
marks AS (
  -- opens: +1 at an op's start, -1 at its end, 0 at a memory event (which never opens)
  SELECT run, phase, rank, trace_id, pid, tid, event_index, ts_ns AS at_ns,
         ts_ns + dur_ns AS end_ns, 1 AS is_start, dur_ns AS span_ns, 1 AS opens
  FROM ops
  UNION ALL
  SELECT run, phase, rank, trace_id, pid, tid, event_index, ts_ns + dur_ns AS at_ns,
         ts_ns + dur_ns AS end_ns, 0 AS is_start, dur_ns AS span_ns, -1 AS opens
  FROM ops
  UNION ALL
  SELECT run, phase, rank, trace_id, pid, tid, event_index, ts_ns AS at_ns, ts_ns AS end_ns,
         1 AS is_start, 0 AS span_ns, 0 AS opens
  FROM events
),
counted AS (
  SELECT *,
         coalesce(sum(opens) OVER (
           PARTITION BY run, phase, rank, trace_id, pid, tid
           ORDER BY at_ns, is_start, span_ns DESC, event_index
           ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS depth,
         row_number() OVER (
           PARTITION BY run, phase, rank, trace_id, pid, tid
           ORDER BY at_ns, is_start, span_ns DESC, event_index) AS pos
  FROM marks
),
levels AS (
  -- an op opens its depth's level; an op or event inside one asks the level above it
  SELECT run, phase, rank, trace_id, pid, tid, pos, depth AS level, event_index AS opener,
         end_ns AS opener_end_ns, CAST(NULL AS BIGINT) AS asker, NULL AS at_ns, NULL AS end_ns,
         NULL AS is_op
  FROM counted WHERE opens = 1
  UNION ALL
  SELECT run, phase, rank, trace_id, pid, tid, pos, depth - 1 AS level, NULL AS opener,
         NULL AS opener_end_ns, event_index AS asker, at_ns, end_ns, opens = 1 AS is_op
  FROM counted WHERE is_start = 1 AND depth > 0
),
found AS (
  SELECT *,
         last_value(opener IGNORE NULLS) OVER (
           PARTITION BY run, phase, rank, trace_id, pid, tid, level
           ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS parent,
         last_value(opener_end_ns IGNORE NULLS) OVER (
           PARTITION BY run, phase, rank, trace_id, pid, tid, level
           ORDER BY pos ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS parent_end_ns
  FROM levels
),
asked AS (
  SELECT *,
         bool_or(parent_end_ns < end_ns OR parent_end_ns <= at_ns) OVER (
           PARTITION BY run, phase, rank, trace_id, pid, tid) AS tangled
  FROM found
  WHERE asker IS NOT NULL
),
tangled_enclosing AS (
  SELECT e.run, e.phase, e.rank, e.trace_id, e.event_index, o.event_index AS op_event_index,
         row_number() OVER (
           PARTITION BY e.run, e.phase, e.rank, e.trace_id, e.event_index
           ORDER BY o.ts_ns DESC, o.dur_ns, o.event_index DESC) AS place
  FROM events AS e
  JOIN (SELECT DISTINCT run, phase, rank, trace_id, pid, tid FROM asked WHERE tangled) AS t
    ON t.run = e.run AND t.phase = e.phase AND t.rank = e.rank AND t.trace_id = e.trace_id
   AND t.pid = e.pid AND t.tid = e.tid
  JOIN ops AS o
    ON o.run = e.run AND o.phase = e.phase AND o.rank = e.rank AND o.trace_id = e.trace_id
   AND o.pid = e.pid AND o.tid = e.tid AND o.ts_ns <= e.ts_ns AND e.ts_ns < o.ts_ns + o.dur_ns
),
enclosing AS (
  SELECT run, phase, rank, trace_id, asker AS event_index, parent AS op_event_index
  FROM asked
  WHERE NOT is_op AND NOT tangled
  UNION ALL
  SELECT run, phase, rank, trace_id, event_index, op_event_index
  FROM tangled_enclosing
  WHERE place = 1
)
SELECT m.run, m.phase, m.rank, m.trace_id, m.event_index, m.ts_ns, m.pid, m.tid,
       m.device_type, m.device_kind, m.device_id, m.addr, m.bytes, m.allocated_bytes,
       m.reserved_bytes, e.op_event_index, o.name AS op_name
FROM events AS m
LEFT JOIN enclosing AS e
  ON e.run = m.run AND e.phase = m.phase AND e.rank = m.rank AND e.trace_id = m.trace_id
 AND e.event_index = m.event_index
LEFT JOIN cpu_ops AS o
  ON o.run = e.run AND o.phase = e.phase AND o.rank = e.rank AND o.trace_id = e.trace_id
 AND o.event_index = e.op_event_index;
