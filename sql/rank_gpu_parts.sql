-- Where each rank's GPU time goes, in parts that sum to its span: communication alone,
-- communication overlapped with computation, computation alone, other GPU work and idle time,
-- beside the idle figures of `rank_idle` (what the report's GPU-time section shows).
-- Ranks with no GPU activity (NULL span) are left out.
--
-- Reads: rank_gpu_time, rank_idle
--
-- Columns:
--   run, phase, rank     partition
--   exposed_comm_ns      communication not hidden under computation, ns
--   overlap_ns           communication overlapped with computation, ns
--   compute_only_ns      computation with no communication at the same time, ns
--   other_ns             other GPU work (memory copies, sync) alone, ns
--   idle_ns              span_ns - busy_ns of rank_gpu_time, ns
--   step_idle_ns         idle time inside ProfilerStep#N windows, ns (NULL without steps)
--   largest_gap_ns       the longest time with no GPU activity within a capture group, ns
--   gap_dominated        the largest gap is the most of the idle time (rank_idle's rule)
--   idle_span_ns         rank_idle's span_ns: first to last activity per capture group,
--                        summed, ns
CREATE OR REPLACE VIEW rank_gpu_parts AS
SELECT t.run, t.phase, t.rank,
       t.comm_ns - t.overlap_ns AS exposed_comm_ns,
       t.overlap_ns,
       t.compute_ns - t.overlap_ns AS compute_only_ns,
       t.busy_ns - (t.comm_ns + t.compute_ns - t.overlap_ns) AS other_ns,
       t.span_ns - t.busy_ns AS idle_ns,
       i.step_idle_ns, i.largest_gap_ns, i.gap_dominated, i.span_ns AS idle_span_ns
FROM rank_gpu_time AS t
JOIN rank_idle AS i ON i.run = t.run AND i.phase = t.phase AND i.rank = t.rank
WHERE t.span_ns IS NOT NULL;
