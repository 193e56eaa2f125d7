-- The operators by the GPU time they launched, per run and phase over all its ranks: op_stats
-- summed over the ranks (the report's top operators).
--
-- Reads: op_stats
--
-- Columns:
--   run, phase         the run and phase (all its ranks)
--   name               the op's name
--   ranks              ranks that ran it
--   calls              its calls
--   gpu_kernels        GPU activities the calls launched themselves
--   gpu_self_ns        their durations summed, ns
--   gpu_self_busy_ns   per call the union of their intervals, summed, ns
--   gpu_total_ns       with the activity of the ops the calls enclose, ns
--   gpu_total_busy_ns  per call the union of those intervals, summed, ns
--   communication      true when the op launched communication kernels on some rank
CREATE OR REPLACE VIEW op_phase_stats AS
SELECT run, phase, name,
       count(*) AS ranks,
       CAST(sum(calls) AS BIGINT) AS calls,
       CAST(sum(gpu_kernels) AS BIGINT) AS gpu_kernels,
       CAST(sum(gpu_self_ns) AS BIGINT) AS gpu_self_ns,
       CAST(sum(gpu_self_busy_ns) AS BIGINT) AS gpu_self_busy_ns,
       CAST(sum(gpu_total_ns) AS BIGINT) AS gpu_total_ns,
       CAST(sum(gpu_total_busy_ns) AS BIGINT) AS gpu_total_busy_ns,
       bool_or(communication) AS communication
FROM op_stats
GROUP BY run, phase, name;
