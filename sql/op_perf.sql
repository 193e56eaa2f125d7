-- How close each call of a modeled op (GEMM, attention, convolution, MoE, elementwise, norm,
-- RMSNorm, RoPE, reduce, KV-cache write, torch.compile's Triton kernels; docs/perf-models.md)
-- runs to the hardware: its modeled FLOPs and bytes (_op_models) over the GPU time it took,
-- against the device's peaks. One row per call of a modeled op with recorded shapes (ops
-- without `Input Dims` are absent). A modeled call that launched no GPU
-- activity itself around a modeled call of its family (a vendor GEMM running aten::mm) is
-- left out: the inner call is the computation, counted once. A captured op that a graph
-- launch replayed (op_kernels' via_capture) has a row per graph launch, in the replay's run,
-- phase and trace: its model from the shapes recorded at capture, its GPU time the replayed
-- kernels' (_graph_op_calls); the capture's own row has no GPU time.
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
-- Reads: _op_models, op_calls, _graph_op_calls, devices, device_peaks
--
-- Columns:
--   run, phase, rank    partition
--   trace_id            the trace of the call (of the graph launch that replayed it)
--   event_index         the call's cpu_op event (in op_trace_id)
--   op_phase            the phase of the trace holding the op (the capture's for a
--                       replayed op, else phase)
--   op_trace_id         the trace holding the op (the capture trace for a replayed op)
--   launch_event_index  the graph launch that replayed the op (NULL: the op ran itself)
--   via_capture         true for a captured op replayed by a graph launch
--   ts_ns               its start on the CPU, ns (a replayed op's: in the capture)
--   name                the op (aten::addmm, ...)
--   family              gemm, attention, convolution, moe, elementwise, norm, rmsnorm,
--                       rope, reduce, kv_cache or triton
--   pass                forward or backward
--   shapes              the call's Input Dims, JSON text
--   input_type          the profiler's type of the first operand (c10::BFloat16, ...)
--   dtype               its peak class (bf16, fp16, fp32, fp8, ...), NULL when unknown
--   flops               floating-point operations of the call (the model; NULL for a
--                       Triton kernel without Inductor's estimate: memory-bound then)
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
eager AS (
  SELECT m.*, c.ts_ns, c.dur_ns, c.pid, c.tid, c.gpu_self_busy_ns, c.gpu_total_busy_ns
  FROM _op_models AS m
  JOIN op_calls AS c
    ON c.run = m.run AND c.phase = m.phase AND c.rank = m.rank AND c.trace_id = m.trace_id
   AND c.event_index = m.event_index
),
calls AS (
  SELECT run, phase, rank, trace_id, event_index, name, family, pass, shapes, input_type,
         dtype, flops, bytes, ts_ns, dur_ns, pid, tid, gpu_self_busy_ns, gpu_total_busy_ns,
         phase AS op_phase, trace_id AS op_trace_id,
         CAST(NULL AS BIGINT) AS launch_event_index, false AS via_capture
  FROM eager AS e
  WHERE e.launch_event_index IS NULL
  UNION ALL
  -- a captured op replayed by a graph launch: its model from the capture's shapes (or, for
  -- one launch only, from that launch's step annotation), its GPU time the replayed kernels'
  -- (_graph_op_calls), in the replay's run, phase and trace
  SELECT g.run, g.phase, g.rank, g.trace_id, e.event_index, e.name, e.family, e.pass,
         e.shapes, e.input_type, e.dtype, e.flops, e.bytes, e.ts_ns, e.dur_ns, e.pid, e.tid,
         g.gpu_self_busy_ns, g.gpu_total_busy_ns, e.phase AS op_phase,
         e.trace_id AS op_trace_id, g.launch_event_index, true AS via_capture
  FROM eager AS e
  JOIN _graph_op_calls AS g
    ON g.run = e.run AND g.op_phase = e.phase AND g.rank = e.rank
   AND g.op_trace_id = e.trace_id AND g.event_index = e.event_index
   AND (e.launch_event_index IS NULL
        OR (e.launch_phase = g.phase AND e.launch_trace_id = g.trace_id
            AND e.launch_event_index = g.launch_event_index))
),
enclosing AS (
  -- a modeled call that launched nothing itself around a modeled call of its family on its
  -- thread (aiter::gemm_a16w16 running aten::mm through aten::linear): the inner call is
  -- the computation, the outer one is left out so that no computation counts twice
  SELECT DISTINCT o.run, o.phase, o.rank, o.trace_id, o.event_index, o.op_trace_id,
         o.launch_event_index
  FROM calls AS o
  JOIN calls AS i
    ON i.run = o.run AND i.phase = o.phase AND i.rank = o.rank AND i.trace_id = o.trace_id
   AND i.op_trace_id = o.op_trace_id
   AND coalesce(i.launch_event_index, -1) = coalesce(o.launch_event_index, -1)
   AND i.pid = o.pid AND i.tid = o.tid AND i.family = o.family
   AND i.event_index <> o.event_index
   AND i.ts_ns >= o.ts_ns AND i.ts_ns + i.dur_ns <= o.ts_ns + o.dur_ns
  WHERE o.gpu_self_busy_ns = 0 AND i.gpu_self_busy_ns > 0
),
timed AS (
  SELECT c.run, c.phase, c.rank, c.trace_id, c.event_index, c.op_phase, c.op_trace_id,
         c.launch_event_index, c.via_capture, c.name, c.family, c.pass,
         c.shapes, c.input_type, c.dtype, c.flops, c.bytes,
         c.ts_ns, c.gpu_total_busy_ns AS gpu_busy_ns, d.device, p.peak_device,
         p.peak_tflops, p.memory_tbs,
         -- model times in ns: 1 TFLOPS/s is 1,000 FLOPs per ns, 1 TB/s 1,000 bytes per ns
         c.flops / (p.peak_tflops * 1000) AS compute_ns,
         c.bytes / (p.memory_tbs * 1000) AS memory_ns
  FROM calls AS c
  LEFT JOIN enclosing AS e
    ON e.run = c.run AND e.phase = c.phase AND e.rank = c.rank AND e.trace_id = c.trace_id
   AND e.event_index = c.event_index AND e.op_trace_id = c.op_trace_id
   AND coalesce(e.launch_event_index, -1) = coalesce(c.launch_event_index, -1)
  LEFT JOIN trace_devices AS d
    ON d.run = c.run AND d.phase = c.phase AND d.rank = c.rank AND d.trace_id = c.trace_id
  LEFT JOIN matched AS p
    ON p.run = c.run AND p.phase = c.phase AND p.rank = c.rank AND p.trace_id = c.trace_id
   AND p.dtype = c.dtype AND p.choice = 1
  WHERE e.event_index IS NULL
),
roofline AS (
  SELECT *,
         CASE WHEN compute_ns >= memory_ns THEN compute_ns ELSE memory_ns END AS roofline_time
  FROM timed
)
SELECT run, phase, rank, trace_id, event_index, op_phase, op_trace_id, launch_event_index,
       via_capture, ts_ns, name, family, pass, shapes,
       input_type, dtype, flops, bytes,
       CAST(flops AS DOUBLE) / nullif(bytes, 0) AS intensity,
       gpu_busy_ns,
       flops / (nullif(gpu_busy_ns, 0) * 1000.0) AS achieved_tflops,
       bytes / (nullif(gpu_busy_ns, 0) * 1000.0) AS achieved_tbs,
       device, peak_device, peak_tflops, memory_tbs,
       TRY_CAST(ceil(roofline_time) AS BIGINT) AS roofline_ns,
       100 * roofline_time / nullif(gpu_busy_ns, 0) AS pct_of_roofline,
       CASE WHEN compute_ns >= memory_ns THEN 'compute'
            WHEN compute_ns < memory_ns OR (flops IS NULL AND memory_ns IS NOT NULL)
            THEN 'memory' END AS bound
FROM roofline;
