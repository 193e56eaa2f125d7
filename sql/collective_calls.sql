-- Every communication kernel of every rank as a collective call: what it was, how large, in
-- which process group, its position there, and the user annotation it ran under.
-- The calls of `_collective_kernels` (its header gives the rules for the collective, the
-- sizes and seq), with the user annotation around the kernel's launch from `op_kernels`:
-- the innermost user_annotation, or, when that is the collective's own `nccl:*` range, the
-- annotation enclosing that range. The annotation needs the host call tree of the whole
-- trace; `collective_instances` and the views after it match calls without it.
--
-- Reads: _collective_kernels, op_kernels, _host_layers, cpu_ops
--
-- Columns:
--   run, phase, rank    partition
--   trace_id            the capture
--   event_index         the kernel event in its trace
--   capture_group       the capture group of the run and phase (see _collective_captures)
--   stream              GPU stream of the kernel
--   name                the kernel name
--   collective          all_reduce, all_gather, reduce_scatter, all_to_all, broadcast,
--                       reduce, send_recv, gather, scatter, barrier, DeepEP's op (dispatch,
--                       combine, notify_dispatch, cached_notify, get_dispatch_layout...),
--                       else the rules' collective or other
--   algorithm           NCCL algorithm from the kernel name (RING, TREE, NVLS...), else NULL
--   protocol            NCCL protocol from the kernel name (LL, LL128, SIMPLE), else NULL
--   process_group       `Process Group Name` arg, else `Process Group ID`, else 'unknown'
--   process_group_desc  `Process Group Description` arg (default_pg...), else NULL
--   group_size          `Group size` arg, else the trace's world size, else NULL
--   dtype               the element type as written (Float, BFloat16, float...), else NULL
--   elem_bytes          bytes per element of dtype, else NULL
--   in_elems            input elements, else NULL
--   out_elems           output elements (NULL from Input Dims)
--   in_splits           `In split size` as written (a text list, '[1, 2]'), NULL when empty
--   out_splits          `Out split size` as written, NULL when empty
--   split_max           the largest of in_splits (else out_splits), NULL without splits
--   split_mean          their mean (DOUBLE), NULL without splits
--   msg_bytes           greatest(in_elems, out_elems) * elem_bytes, bytes; NULL when unknown
--   size_source         kernel_args, record_param_comms, nccl_range or none
--   seq                 1, 2, ... within run, phase, rank, capture_group, process_group
--   start_ns            kernel start, ns
--   dur_ns              kernel duration, ns
--   end_ns              start_ns + dur_ns, ns
--   annotation          the user annotation around the launch (see above), else NULL
CREATE OR REPLACE VIEW collective_calls AS
WITH annotated AS NOT MATERIALIZED (
  SELECT o.run, o.phase, o.rank, o.trace_id, o.event_index,
         CASE WHEN o.annotation LIKE 'nccl:%' THEN p.name ELSE o.annotation END AS annotation
  FROM op_kernels AS o
  LEFT JOIN _host_layers AS l
    ON l.layer = 'annotation' AND l.run = o.run AND l.phase = o.phase AND l.rank = o.rank
   AND l.trace_id = o.trace_id AND l.event_index = o.annotation_event_index
   AND o.annotation LIKE 'nccl:%'
  LEFT JOIN cpu_ops AS p
    ON p.run = l.run AND p.phase = l.phase AND p.rank = l.rank AND p.trace_id = l.trace_id
   AND p.event_index = l.parent_event_index
  WHERE o.class = 'communication'
)
SELECT c.*, a.annotation
FROM _collective_kernels AS c
LEFT JOIN annotated AS a
  ON a.run = c.run AND a.phase = c.phase AND a.rank = c.rank AND a.trace_id = c.trace_id
 AND a.event_index = c.event_index;
