-- How close each GEMM shape runs to the hardware's peak, per run and phase over all its ranks:
-- the calls of op_perf of family gemm grouped by operand shapes, data type and the device
-- peak they are measured against (the report's top GEMMs).
--
-- Only calls with GPU busy time count. Achieved TFLOPS/s is the group's model FLOPs over its
-- GPU busy time; the roofline share compares the least time the FLOPs and bytes need at the
-- device's peaks with that time.
--
-- Reads: op_perf
--
-- Columns:
--   run, phase         the run and phase (all its ranks)
--   name               the op (aten::mm, aten::addmm, ...)
--   shapes             the calls' Input Dims, JSON text
--   dtype              their peak class (bf16, fp16, fp32, fp8, ...), NULL when unknown
--   peak_device        the device_peaks entry matched, NULL when none
--   calls              calls with GPU busy time
--   gpu_busy_ns        their GPU busy time summed, ns
--   flops              their model FLOPs summed
--   achieved_tflops    flops per second over gpu_busy_ns, 10^12 (DOUBLE)
--   peak_tflops        the device's dense peak for dtype, 10^12 FLOPs/s
--   pct_of_peak        100 x achieved_tflops / peak_tflops (DOUBLE)
--   pct_of_roofline    100 x the calls' roofline time / gpu_busy_ns (DOUBLE)
--   bound              compute or memory (the least over the calls), NULL without a peak
CREATE OR REPLACE VIEW gemm_shapes AS
SELECT run, phase, name, shapes, dtype, peak_device,
       count(*) AS calls,
       CAST(sum(gpu_busy_ns) AS BIGINT) AS gpu_busy_ns,
       CAST(sum(flops) AS BIGINT) AS flops,
       sum(flops) / (sum(gpu_busy_ns) * 1000.0) AS achieved_tflops,
       min(peak_tflops) AS peak_tflops,
       100 * sum(flops) / (sum(gpu_busy_ns) * 1000.0) / min(peak_tflops) AS pct_of_peak,
       100.0 * sum(roofline_ns) / sum(gpu_busy_ns) AS pct_of_roofline,
       min(bound) AS bound
FROM op_perf
WHERE family = 'gemm' AND gpu_busy_ns > 0
GROUP BY run, phase, name, shapes, dtype, peak_device;
