-- How close each call of a GEMM, attention or convolution op runs to the hardware: its
-- modeled FLOPs and bytes (_op_models) over the GPU time it took, against the device's peaks.
-- One row per call of a modeled op with recorded shapes (ops without `Input Dims` are absent).
-- The call's GPU time is `gpu_total_busy_ns` of op_calls: the union of the intervals of the
-- GPU activity it and the ops it encloses launched (a GEMM's kernel launched by an inner
-- op, or a memset beside it, counts; kernels overlapping on two streams count once); a call
-- that launched nothing has NULL achieved figures. The device is the trace's GPU (the
-- `devices` rows of the trace, when they name one product; else NULL). Its peaks are the
-- first device_peaks row (by priority: --peaks rows first) whose pattern matches the
-- lower-cased device name and whose dtype is the call's; none (or bytes unknown), and the
-- roofline columns are NULL. Roofline time is the larger of flops at the peak and bytes at
-- the memory bandwidth; a call is compute-bound when flops take the longer. TFLOPS/s are
-- 10^12 FLOPs per second, TB/s 10^12 bytes per second.
--
-- Reads: _op_models, op_calls, devices, device_peaks
--
-- Columns:
--   run, phase, rank    partition
--   trace_id            the trace of the call
--   event_index         the call's cpu_op event
--   ts_ns               its start on the CPU, ns
--   name                the op (aten::addmm, ...)
--   family              gemm, attention or convolution
--   pass                forward or backward
--   shapes              the call's Input Dims, JSON text
--   input_type          the profiler's type of the first operand (c10::BFloat16, ...)
--   dtype               its peak class (bf16, fp16, fp32, fp8, ...), NULL when unknown
--   flops               floating-point operations of the call (the model)
--   bytes               bytes read and written (the model), NULL when a type is unknown
--   intensity           flops per byte (DOUBLE)
--   gpu_busy_ns         GPU busy time of the call and the ops it encloses, ns
--   achieved_tflops     flops per second over gpu_busy_ns, 10^12 (DOUBLE)
--   achieved_tbs        bytes per second over gpu_busy_ns, 10^12 (DOUBLE)
--   device              the trace's GPU name (deviceProperties)
--   peak_device         the device_peaks entry matched (NVIDIA H100 SXM5, ...)
--   peak_tflops         its dense peak for dtype, 10^12 FLOPs/s
--   memory_tbs          its memory bandwidth, 10^12 bytes/s
--   roofline_ns         the least time the call can take at those peaks, ns (rounded up)
--   pct_of_roofline     100 x roofline time / gpu_busy_ns (DOUBLE, before rounding)
--   bound               compute or memory: which peak sets the roofline time
CREATE OR REPLACE VIEW op_perf AS
WITH trace_devices AS (
  SELECT run, phase, rank, trace_id, min(name) AS device
  FROM devices
  GROUP BY run, phase, rank, trace_id
  HAVING count(DISTINCT name) = 1
),
device_dtypes AS (
  SELECT DISTINCT d.run, d.phase, d.rank, d.trace_id, d.device, m.dtype
  FROM trace_devices AS d
  JOIN _op_models AS m
    ON m.run = d.run AND m.phase = d.phase AND m.rank = d.rank AND m.trace_id = d.trace_id
),
matched AS (
  SELECT t.run, t.phase, t.rank, t.trace_id, t.dtype, p.device AS peak_device, p.peak_tflops,
         p.memory_tbs,
         row_number() OVER (PARTITION BY t.run, t.phase, t.rank, t.trace_id, t.dtype
                            ORDER BY p.priority) AS choice
  FROM device_dtypes AS t
  JOIN device_peaks AS p
    ON p.dtype = t.dtype AND regexp_matches(lower(t.device), p.pattern)
),
timed AS (
  SELECT m.*, c.ts_ns, c.gpu_total_busy_ns AS gpu_busy_ns, d.device, p.peak_device,
         p.peak_tflops, p.memory_tbs,
         -- model times in ns: 1 TFLOPS/s is 1,000 FLOPs per ns, 1 TB/s 1,000 bytes per ns
         m.flops / (p.peak_tflops * 1000) AS compute_ns,
         m.bytes / (p.memory_tbs * 1000) AS memory_ns
  FROM _op_models AS m
  JOIN op_calls AS c
    ON c.run = m.run AND c.phase = m.phase AND c.rank = m.rank AND c.trace_id = m.trace_id
   AND c.event_index = m.event_index
  LEFT JOIN trace_devices AS d
    ON d.run = m.run AND d.phase = m.phase AND d.rank = m.rank AND d.trace_id = m.trace_id
  LEFT JOIN matched AS p
    ON p.run = m.run AND p.phase = m.phase AND p.rank = m.rank AND p.trace_id = m.trace_id
   AND p.dtype = m.dtype AND p.choice = 1
),
roofline AS (
  SELECT *,
         CASE WHEN compute_ns >= memory_ns THEN compute_ns ELSE memory_ns END AS roofline_time
  FROM timed
)
SELECT run, phase, rank, trace_id, event_index, ts_ns, name, family, pass, shapes,
       input_type, dtype, flops, bytes,
       CAST(flops AS DOUBLE) / nullif(bytes, 0) AS intensity,
       gpu_busy_ns,
       flops / (nullif(gpu_busy_ns, 0) * 1000.0) AS achieved_tflops,
       bytes / (nullif(gpu_busy_ns, 0) * 1000.0) AS achieved_tbs,
       device, peak_device, peak_tflops, memory_tbs,
       TRY_CAST(ceil(roofline_time) AS BIGINT) AS roofline_ns,
       100 * roofline_time / nullif(gpu_busy_ns, 0) AS pct_of_roofline,
       CASE WHEN compute_ns >= memory_ns THEN 'compute'
            WHEN compute_ns < memory_ns THEN 'memory' END AS bound
FROM roofline;
