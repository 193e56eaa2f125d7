-- One row per run and phase: the figures that set phases side by side (prefill against decode
-- of an inference run, warmup against train), every rank of the phase pooled.
-- GPU times are sums over the phase's ranks (rank_gpu_time: unions of all streams, within
-- each capture group), so their shares weigh each rank by its time; the step time is the
-- median over every ProfilerStep#N window of every rank (NULL when the phase has none).
-- Kernel time is the sum of the durations of GPU work (kernels, copies, memsets, syncs; not
-- gpu_user_annotation ranges), split by class: sync and other kernels count as other, as in
-- the report's timeline. The top kernel is the short name with the most kernel time (ties by
-- name).
--
-- The memory peak is the largest over the phase's ranks and GPU devices (memory_peaks: each
-- rank's maximum over its captures), NULL when the phase has no [memory] events of a GPU.
--
-- Reads: traces, rank_gpu_time, cpu_ops, kernel_classes, memory_peaks
--
-- Columns:
--   run, phase            partition
--   ranks                 ranks with a trace in the phase
--   steps                 ProfilerStep#N windows over all ranks (0 without)
--   step_time_ns          median duration of those windows, ns (NULL without)
--   span_ns               GPU span, first to last activity within each capture group,
--                         summed over ranks, ns
--   busy_ns               GPU busy time (union of all streams), summed over ranks, ns
--   comm_ns               time communication kernels ran, summed over ranks, ns
--   compute_ns            time computation kernels ran, summed over ranks, ns
--   overlap_ns            time both ran, summed over ranks, ns
--   exposed_comm_ns       comm_ns - overlap_ns: communication not hidden, ns
--   idle_ns               span_ns - busy_ns: no GPU activity on any stream, ns
--   busy_ratio            busy_ns / span_ns (NULL when the span is 0 or missing)
--   overlap_ratio         overlap_ns / comm_ns (NULL without communication)
--   idle_ratio            idle_ns / span_ns (NULL when the span is 0 or missing)
--   kernel_ns             summed durations of the phase's GPU work, ns
--   communication_share   share of kernel_ns in communication kernels (DOUBLE)
--   computation_share     share of kernel_ns in computation kernels
--   memory_share          share of kernel_ns in memory copies and sets
--   other_share           share of kernel_ns in sync and other GPU work
--   top_kernel            short name of the GPU work with the most kernel time
--   top_kernel_share      its share of kernel_ns
--   peak_allocated_bytes  the most bytes allocated on one GPU of the phase, bytes
--   peak_reserved_bytes   the most bytes the allocator reserved on one GPU, bytes
CREATE OR REPLACE VIEW phase_summary AS
WITH phases AS (
  SELECT run, phase, count(DISTINCT rank) AS ranks
  FROM traces
  GROUP BY run, phase
),
gpu AS (
  SELECT run, phase,
         CAST(sum(span_ns) AS BIGINT) AS span_ns,
         CAST(sum(busy_ns) AS BIGINT) AS busy_ns,
         CAST(sum(comm_ns) AS BIGINT) AS comm_ns,
         CAST(sum(compute_ns) AS BIGINT) AS compute_ns,
         CAST(sum(overlap_ns) AS BIGINT) AS overlap_ns
  FROM rank_gpu_time
  GROUP BY run, phase
),
steps AS (
  SELECT run, phase, count(*) AS steps,
         percentile_disc(0.5) WITHIN GROUP (ORDER BY dur_ns) AS step_time_ns
  FROM cpu_ops
  WHERE name LIKE 'ProfilerStep#%' AND dur_ns IS NOT NULL
  GROUP BY run, phase
),
work AS NOT MATERIALIZED (
  SELECT run, phase, class, short_name, dur_ns
  FROM kernel_classes
  WHERE category <> 'gpu_user_annotation' AND dur_ns IS NOT NULL
),
classes AS (
  SELECT run, phase,
         CAST(sum(dur_ns) AS BIGINT) AS kernel_ns,
         sum(CASE WHEN class = 'communication' THEN dur_ns ELSE 0 END) AS communication_ns,
         sum(CASE WHEN class = 'computation' THEN dur_ns ELSE 0 END) AS computation_ns,
         sum(CASE WHEN class = 'memory' THEN dur_ns ELSE 0 END) AS memory_ns
  FROM work
  GROUP BY run, phase
),
names AS (
  SELECT run, phase, short_name, sum(dur_ns) AS total_ns,
         row_number() OVER (PARTITION BY run, phase
                            ORDER BY sum(dur_ns) DESC, short_name) AS place
  FROM work
  GROUP BY run, phase, short_name
),
memory AS (
  SELECT run, phase, max(peak_allocated_bytes) AS peak_allocated_bytes,
         max(peak_reserved_bytes) AS peak_reserved_bytes
  FROM memory_peaks
  WHERE device_kind <> 'cpu'
  GROUP BY run, phase
)
SELECT p.run, p.phase, p.ranks,
       coalesce(s.steps, 0) AS steps, s.step_time_ns,
       g.span_ns, g.busy_ns, g.comm_ns, g.compute_ns, g.overlap_ns,
       g.comm_ns - g.overlap_ns AS exposed_comm_ns,
       g.span_ns - g.busy_ns AS idle_ns,
       CASE WHEN g.span_ns > 0 THEN CAST(g.busy_ns AS DOUBLE) / g.span_ns END AS busy_ratio,
       CASE WHEN g.comm_ns > 0 THEN CAST(g.overlap_ns AS DOUBLE) / g.comm_ns END
         AS overlap_ratio,
       CASE WHEN g.span_ns > 0 THEN CAST(g.span_ns - g.busy_ns AS DOUBLE) / g.span_ns END
         AS idle_ratio,
       c.kernel_ns,
       CASE WHEN c.kernel_ns > 0 THEN CAST(c.communication_ns AS DOUBLE) / c.kernel_ns END
         AS communication_share,
       CASE WHEN c.kernel_ns > 0 THEN CAST(c.computation_ns AS DOUBLE) / c.kernel_ns END
         AS computation_share,
       CASE WHEN c.kernel_ns > 0 THEN CAST(c.memory_ns AS DOUBLE) / c.kernel_ns END
         AS memory_share,
       CASE WHEN c.kernel_ns > 0
            THEN CAST(c.kernel_ns - c.communication_ns - c.computation_ns - c.memory_ns
                      AS DOUBLE) / c.kernel_ns END AS other_share,
       n.short_name AS top_kernel,
       CASE WHEN c.kernel_ns > 0 THEN CAST(n.total_ns AS DOUBLE) / c.kernel_ns END
         AS top_kernel_share,
       m.peak_allocated_bytes, m.peak_reserved_bytes
FROM phases AS p
LEFT JOIN gpu AS g ON g.run = p.run AND g.phase = p.phase
LEFT JOIN steps AS s ON s.run = p.run AND s.phase = p.phase
LEFT JOIN classes AS c ON c.run = p.run AND c.phase = p.phase
LEFT JOIN names AS n ON n.run = p.run AND n.phase = p.phase AND n.place = 1
LEFT JOIN memory AS m ON m.run = p.run AND m.phase = p.phase;
