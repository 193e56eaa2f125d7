-- GPU time per nn.Module path, per run and phase over all its ranks: module_stats summed over
-- the ranks (the report's module tree).
--
-- Reads: module_stats
--
-- Columns:
--   run, phase         the run and phase (all its ranks)
--   module_path        the module's path, outer to inner; NULL: outside any module
--   depth              number of modules enclosing it (the least over the ranks)
--   ranks              ranks that have the path
--   calls              module frames with this path
--   gpu_kernels        GPU activities whose innermost module has this path
--   gpu_self_ns        their durations summed, ns
--   gpu_total_ns       with the activity of the modules inside it, ns
CREATE OR REPLACE VIEW module_phase_stats AS
SELECT run, phase, module_path,
       min(depth) AS depth,
       count(*) AS ranks,
       CAST(sum(calls) AS BIGINT) AS calls,
       CAST(sum(gpu_kernels) AS BIGINT) AS gpu_kernels,
       CAST(sum(gpu_self_ns) AS BIGINT) AS gpu_self_ns,
       CAST(sum(gpu_total_ns) AS BIGINT) AS gpu_total_ns
FROM module_stats
GROUP BY run, phase, module_path;
