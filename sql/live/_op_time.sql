-- _op_time computed from the host call tree, where the rows measured at ingest do not hold:
-- the effective kernel rules are not the defaults (communication time follows the rules),
-- or the warehouse was created before op_time existed.
--
-- Self and total follow op_calls (an op's own GPU activity is what op_kernels attributes
-- to it; total adds what the ops it encloses launched), summed over the calls of each name
-- in each trace. host_self_ns is the op's CPU time less that of the events it directly
-- encloses (_host_tree). The backward columns add up the backward calls linked to this op
-- as their forward op (_backward_links).
--
-- Reads: op_calls, _host_tree, _host_ancestors, _backward_links
--
-- Columns:
--   run, phase, rank             partition
--   trace_id                     the trace
--   name                         the op's name
--   calls                        its calls
--   gpu_calls                    calls that launched GPU activity themselves
--   host_ns                      sum of the calls' CPU durations, ns
--   host_self_ns                 host_ns less the CPU time of the events the calls directly
--                                enclose, ns
--   gpu_kernels                  GPU activities the calls launched themselves
--   gpu_self_ns                  sum of those activities' durations, ns
--   gpu_self_busy_ns             per call the union of their intervals, summed, ns
--   gpu_total_ns                 gpu_self_ns of the calls and all the ops they enclose, ns;
--                                a call within a call of its name adds nothing (the outer
--                                one's total holds it)
--   gpu_total_busy_ns            per call the union of those intervals, summed (the same
--                                calls), ns
--   gpu_self_comm_ns             the part of gpu_self_ns in communication kernels, ns
--   backward_calls               backward calls linked to calls of this op
--   backward_gpu_total_ns        their gpu_total_ns summed, ns
--   backward_gpu_total_busy_ns   their gpu_total_busy_ns summed, ns
CREATE OR REPLACE VIEW _op_time AS
WITH children AS (
  SELECT run, phase, rank, trace_id, parent_event_index AS event_index,
         sum(coalesce(dur_ns, 0)) AS child_ns
  FROM _host_tree
  WHERE parent_event_index IS NOT NULL
  GROUP BY run, phase, rank, trace_id, parent_event_index
),
calls AS (
  SELECT o.*, coalesce(c.child_ns, 0) AS child_ns
  FROM op_calls AS o
  LEFT JOIN children AS c
    ON c.run = o.run AND c.phase = o.phase AND c.rank = o.rank AND c.trace_id = o.trace_id
   AND c.event_index = o.event_index
),
chains AS (
  -- each launching call with itself and its cpu_op ancestors: every call with GPU time in
  -- its total is on the chain of a launcher, with all the calls enclosing it
  SELECT run, phase, rank, trace_id, event_index, ancestor_event_index AS member
  FROM _host_ancestors
  WHERE layer = 'cpu_op'
  UNION ALL
  SELECT run, phase, rank, trace_id, event_index, event_index AS member
  FROM calls
  WHERE gpu_kernels > 0
),
nested AS (
  -- the calls within a call of their own name: the name's total holds them already
  SELECT DISTINCT y.run, y.phase, y.rank, y.trace_id, c.event_index
  FROM chains AS y
  JOIN chains AS z
    ON z.run = y.run AND z.phase = y.phase AND z.rank = y.rank AND z.trace_id = y.trace_id
   AND z.event_index = y.event_index
  JOIN calls AS c
    ON c.run = y.run AND c.phase = y.phase AND c.rank = y.rank AND c.trace_id = y.trace_id
   AND c.event_index = y.member
  JOIN calls AS a
    ON a.run = z.run AND a.phase = z.phase AND a.rank = z.rank AND a.trace_id = z.trace_id
   AND a.event_index = z.member
  WHERE a.name = c.name AND a.depth < c.depth
),
per_name AS (
  SELECT c.run, c.phase, c.rank, c.trace_id, c.name, count(*) AS calls,
         count(CASE WHEN gpu_kernels > 0 THEN 1 END) AS gpu_calls,
         CAST(sum(coalesce(dur_ns, 0)) AS BIGINT) AS host_ns,
         CAST(sum(coalesce(dur_ns, 0) - child_ns) AS BIGINT) AS host_self_ns,
         CAST(sum(gpu_kernels) AS BIGINT) AS gpu_kernels,
         CAST(sum(gpu_self_ns) AS BIGINT) AS gpu_self_ns,
         CAST(sum(gpu_self_busy_ns) AS BIGINT) AS gpu_self_busy_ns,
         CAST(sum(CASE WHEN n.event_index IS NULL THEN gpu_total_ns ELSE 0 END) AS BIGINT)
           AS gpu_total_ns,
         CAST(sum(CASE WHEN n.event_index IS NULL THEN gpu_total_busy_ns ELSE 0 END)
              AS BIGINT) AS gpu_total_busy_ns,
         CAST(sum(gpu_self_comm_ns) AS BIGINT) AS gpu_self_comm_ns
  FROM calls AS c
  LEFT JOIN nested AS n
    ON n.run = c.run AND n.phase = c.phase AND n.rank = c.rank AND n.trace_id = c.trace_id
   AND n.event_index = c.event_index
  GROUP BY c.run, c.phase, c.rank, c.trace_id, c.name
),
backward AS (
  SELECT b.run, b.phase, b.rank, b.trace_id, b.forward_name AS name, count(*) AS backward_calls,
         CAST(sum(c.gpu_total_ns) AS BIGINT) AS backward_gpu_total_ns,
         CAST(sum(c.gpu_total_busy_ns) AS BIGINT) AS backward_gpu_total_busy_ns
  FROM _backward_links AS b
  JOIN calls AS c
    ON c.run = b.run AND c.phase = b.phase AND c.rank = b.rank AND c.trace_id = b.trace_id
   AND c.event_index = b.event_index
  WHERE b.forward_name IS NOT NULL
  GROUP BY b.run, b.phase, b.rank, b.trace_id, b.forward_name
)
SELECT p.run, p.phase, p.rank, p.trace_id, p.name, p.calls, p.gpu_calls, p.host_ns,
       p.host_self_ns, p.gpu_kernels, p.gpu_self_ns, p.gpu_self_busy_ns, p.gpu_total_ns,
       p.gpu_total_busy_ns, p.gpu_self_comm_ns,
       CAST(coalesce(b.backward_calls, 0) AS BIGINT) AS backward_calls,
       coalesce(b.backward_gpu_total_ns, 0) AS backward_gpu_total_ns,
       coalesce(b.backward_gpu_total_busy_ns, 0) AS backward_gpu_total_busy_ns
FROM per_name AS p
LEFT JOIN backward AS b
  ON b.run = p.run AND b.phase = p.phase AND b.rank = p.rank AND b.trace_id = p.trace_id
 AND b.name = p.name;
