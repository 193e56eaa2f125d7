-- Each backward call (`autograd::engine::evaluate_function: XBackward0`), the forward op
-- that made its autograd node and the GPU time of the call, so forward and backward time of
-- an op can be told apart.
--
-- Links as _backward_links: a `fwdbwd` flow ending within the call on its thread (the
-- forward op is where the flow starts), else the last op started before it with its
-- `Sequence number` that is not itself a backward call or node. GPU time as op_calls.
--
-- Reads: _backward_links, op_calls
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
--   gpu_total_ns           GPU activity of the backward call and everything it encloses, ns
--   gpu_total_busy_ns      length of the union of that activity, ns
CREATE OR REPLACE VIEW op_backward AS
WITH backward_calls AS (
  -- op_calls of the backward calls' name only, a filter its scans apply: joined whole, its
  -- every call was hashed (18M over 64 ranks of DeepSeek's trace x64) to find 4% of them
  SELECT run, phase, rank, trace_id, event_index, gpu_total_ns, gpu_total_busy_ns
  FROM op_calls
  WHERE name LIKE 'autograd::engine::evaluate_function: %'
)
SELECT b.*, c.gpu_total_ns, c.gpu_total_busy_ns
FROM _backward_links AS b
JOIN backward_calls AS c
  ON c.run = b.run AND c.phase = b.phase AND c.rank = b.rank AND c.trace_id = b.trace_id
 AND c.event_index = b.event_index;
