-- Each backward call (`autograd::engine::evaluate_function: XBackward0`) linked to the
-- forward op that made its autograd node: the links op_backward and op_stats read.
--
-- Linked by a `fwdbwd` flow of the same trace when one ends (ph f, or a step t) on the
-- backward call's thread within its span: the forward op is the cpu_op where the flow starts
-- (same thread and start; the longest there, then the earliest in the file). Else by
-- `Sequence number`: the cpu_op of the same trace with the call's sequence number that
-- started before it and is neither a backward call nor an autograd node (`...Backward...`),
-- the last to start (then the shortest: the op that made the node runs innermost, and later
-- ops take the next number). Calls with neither keep NULL forward columns. The links are
-- built once per trace at ingest (`backward_links`, ingest/call_tree.py); a warehouse created
-- before backward_links existed replaces this view by sql/live/_backward_links.sql, which
-- finds the same links at query time.
--
-- Reads: cpu_ops, backward_links
--
-- Columns:
--   run, phase, rank       partition
--   trace_id               the trace
--   event_index            the backward call's event in cpu_ops
--   name                   its name
--   node                   the autograd node: the name without
--                          `autograd::engine::evaluate_function: `
--   sequence_number        its autograd sequence number
--   forward_event_index    the forward op's event in cpu_ops (NULL: not linked)
--   forward_name           its name
--   link                   fwdbwd, sequence_number or NULL
CREATE OR REPLACE VIEW _backward_links AS
SELECT c.run, c.phase, c.rank, c.trace_id, c.event_index, c.name,
       substr(c.name, 38) AS node, c.sequence_number, b.forward_event_index,
       o.name AS forward_name, b.link
FROM cpu_ops AS c
LEFT JOIN backward_links AS b
  ON b.run = c.run AND b.phase = c.phase AND b.rank = c.rank AND b.trace_id = c.trace_id
 AND b.event_index = c.event_index
LEFT JOIN cpu_ops AS o
  ON o.run = b.run AND o.phase = b.phase AND o.rank = b.rank AND o.trace_id = b.trace_id
 AND o.event_index = b.forward_event_index
WHERE c.category = 'cpu_op' AND c.name LIKE 'autograd::engine::evaluate_function: %';
