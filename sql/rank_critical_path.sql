-- Each rank's critical path of each step: the chain of work that set the step's length on
-- that rank, one row per path edge in path order, by the rules of HTA's critical path
-- analysis (measured at ingest into `critical_path_edges`; the graph and its rules are
-- described in ingest/critical_path.py). Nodes are the starts and ends of cpu_op events,
-- runtime calls and the GPU work they launched; edges follow each thread's call stack, each
-- kernel's run, the launch delay of a kernel launched onto an empty stream, and the gap
-- since the previous kernel on its stream otherwise (under 1.5 ms), the runtime-lock chain
-- across threads (cudaLaunchKernel, cudaMemcpyAsync, cudaHostAlloc in the order they end),
-- the syncs' zero-weight edges, and the
-- launch delay of a graph launch's first kernel on each stream. The zero-weight links between a
-- thread's top-level events are not rows, so consecutive rows may leave a gap.
-- Communication is tracewh's class under the default kernel rules (HTA's: `^nccl.*Kernel`
-- only). MTIA's device work (mtia_ccp_events, launched by mtia_runtime calls) is GPU work
-- here; HTA fails on MTIA traces, as on CPU-only ones (see docs/critical-path.md). A trace without ProfilerStep#N has one path over its whole capture (step NULL).
--
-- The table also holds each communication kernel's segment (`segment_of`, what the job's
-- path across ranks joins: see critical_path); this view keeps the step's path only.
--
-- Reads: critical_path_edges, kernel_names
--
-- Columns:
--   run, phase, rank   partition
--   step               the step (ProfilerStep#N), NULL for a trace without steps
--   seq                position of the edge on the path, from 0
--   bound_by           cpu_bound, data_loading (a host event whose name loads data:
--                      PyTorch's DataLoader, HTA's data_loading and copy_batch_to_gpu),
--                      gpu_compute_bound, gpu_communication_bound,
--                      gpu_kernel_launch_overhead or gpu_kernel_kernel_overhead
--   ns                 time the edge adds to the path, ns (0: the end of a blocking call,
--                      whose wait is the GPU's)
--   start_ns, end_ns   times of the edge's two nodes, ns
--   name               the event the edge is attributed to (NULL for a launch delay, but
--                      a graph launch's: its cudaGraphLaunch or hipGraphLaunch call)
--   event_table        its table: cpu_ops, runtime or kernels
--   event_id           its event_index in that table
--   hta_bound_by       the class HTA gives the edge where it differs from bound_by:
--                      gpu_compute_bound for a kernel tracewh counts as communication whose
--                      name HTA does not (`^nccl.*Kernel`: DeepEP, RCCL, symmetric memory);
--                      NULL for the launch delay of a graph launch (cudaGraphLaunch,
--                      hipGraphLaunch), which HTA leaves unconnected to its kernels; NULL
--                      on every edge of a trace HTA gives no path of: a CPU-only trace (no
--                      kernel, gpu_memcpy or gpu_memset) or an MTIA trace (mtia_ccp_events),
--                      on which HTA fails; else bound_by
CREATE OR REPLACE VIEW rank_critical_path AS
WITH hta_traces AS (  -- the traces HTA's critical path analysis does not fail on
  SELECT run, phase, rank, trace_id
  FROM kernel_names
  GROUP BY run, phase, rank, trace_id
  HAVING count(CASE WHEN category IN ('kernel', 'gpu_memcpy', 'gpu_memset') THEN 1 END) > 0
     AND count(CASE WHEN category = 'mtia_ccp_events' THEN 1 END) = 0
)
SELECT e.run, e.phase, e.rank, e.step, e.seq, e.bound_by, e.ns, e.start_ns, e.end_ns, e.name,
       e.event_table, e.event_index AS event_id,
       CASE WHEN h.trace_id IS NULL THEN NULL
            WHEN e.bound_by = 'gpu_communication_bound'
             AND NOT regexp_matches(e.name, '^nccl.*Kernel') THEN 'gpu_compute_bound'
            WHEN e.bound_by = 'gpu_kernel_launch_overhead' AND e.event_table = 'runtime'
              THEN NULL
            ELSE e.bound_by END AS hta_bound_by
FROM critical_path_edges AS e
LEFT JOIN hta_traces AS h
  ON h.run = e.run AND h.phase = e.phase AND h.rank = e.rank AND h.trace_id = e.trace_id
WHERE e.segment_of IS NULL;
