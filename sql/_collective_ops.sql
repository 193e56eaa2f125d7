-- The communication ops around each communication kernel's launch: the `record_param_comms`
-- op and the `nccl:*` range (a cpu_op or user_annotation) that enclose the launching runtime
-- call on its thread, where older traces and the CPU side keep a collective's metadata.
-- The launch is a runtime call of the same trace with the kernel's correlation id that starts
-- at or before the kernel (of several, the latest); an op encloses it when it starts at or
-- before the launch and ends after it, on the same process and thread; of several, the
-- innermost (the one started last, then the later event). Only communication kernels, their
-- launches and ops of those names are joined, so the cost follows the collectives, not the
-- whole call tree (`_host_tree`). Never across trace_id.
--
-- Reads: kernels, kernel_name_classes, runtime, cpu_ops
--
-- Columns:
--   run, phase, rank   partition
--   trace_id           the trace
--   event_index        the communication kernel's event in kernels
--   comms_args         args of the enclosing record_param_comms op, else NULL
--   range_name         name of the enclosing nccl:* range (nccl:all_reduce), else NULL
--   range_args         its args (Input Dims, Input type), else NULL
CREATE OR REPLACE VIEW _collective_ops AS
WITH comm_kernels AS NOT MATERIALIZED (
  SELECT k.run, k.phase, k.rank, k.trace_id, k.event_index, k.correlation, k.ts_ns
  FROM kernels AS k
  JOIN kernel_name_classes AS n
    ON n.run = k.run AND n.category = k.category AND n.name_key = k.name_id
  WHERE n.class = 'communication' AND n.category = 'kernel'
),
comm_ops AS NOT MATERIALIZED (
  SELECT run, phase, rank, trace_id, event_index, name, pid, tid, ts_ns,
         ts_ns + coalesce(dur_ns, 0) AS end_ns, args,
         CASE WHEN name = 'record_param_comms' THEN 'comms' ELSE 'range' END AS kind
  FROM cpu_ops
  WHERE name = 'record_param_comms' OR name LIKE 'nccl:%'
),
launches AS NOT MATERIALIZED (
  -- only in traces that have such ops: elsewhere no launch is inside one, and the kernels
  -- need not be joined to their runtime events for nothing
  SELECT c.run, c.phase, c.rank, c.trace_id, c.event_index, r.ts_ns AS launch_ns, r.pid,
         r.tid
  FROM comm_kernels AS c
  JOIN runtime AS r
    ON r.run = c.run AND r.phase = c.phase AND r.rank = c.rank AND r.trace_id = c.trace_id
   AND r.correlation = c.correlation AND r.ts_ns <= c.ts_ns
  WHERE EXISTS (SELECT 1 FROM comm_ops AS o
                WHERE o.run = c.run AND o.phase = c.phase AND o.rank = c.rank
                  AND o.trace_id = c.trace_id)
),
enclosing AS NOT MATERIALIZED (
  SELECT l.run, l.phase, l.rank, l.trace_id, l.event_index, o.kind, o.name, o.args,
         row_number() OVER (
           PARTITION BY l.run, l.phase, l.rank, l.trace_id, l.event_index, o.kind
           ORDER BY l.launch_ns DESC, o.ts_ns DESC, o.event_index DESC) AS nth
  FROM launches AS l
  JOIN comm_ops AS o
    ON o.run = l.run AND o.phase = l.phase AND o.rank = l.rank AND o.trace_id = l.trace_id
   AND o.pid = l.pid AND o.tid = l.tid AND o.ts_ns <= l.launch_ns AND l.launch_ns < o.end_ns
)
SELECT run, phase, rank, trace_id, event_index,
       max(CASE WHEN kind = 'comms' THEN args END) AS comms_args,
       max(CASE WHEN kind = 'range' THEN name END) AS range_name,
       max(CASE WHEN kind = 'range' THEN args END) AS range_args
FROM enclosing
WHERE nth = 1
GROUP BY run, phase, rank, trace_id, event_index;
