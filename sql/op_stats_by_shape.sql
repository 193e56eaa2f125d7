-- Operator GPU time by input shape and dtype: the rows of op_stats split by the `Input Dims`
-- and `Input type` the profiler recorded (record_shapes=True), for "which GEMM shape costs
-- the most".
--
-- Only calls whose args hold `Input Dims` are counted (ops without shapes are absent). The
-- shapes and types are the args' JSON text as written, so equal text is equal shape. Figures
-- as in op_stats: sums over calls, busy times per-call unions summed.
--
-- Reads: op_calls, cpu_ops
--
-- Columns:
--   run, phase, rank     partition
--   name                 the op's name
--   input_dims           `Input Dims` as JSON text ([[768],[788,768],[768,768],[],[]])
--   input_types          `Input type` as JSON text (["c10::BFloat16", ...]); NULL if absent
--   calls                calls with these shapes and types
--   gpu_calls            of which launched GPU activity themselves
--   host_ns              sum of their CPU durations, ns
--   gpu_self_ns          GPU activity they launched themselves, summed, ns
--   gpu_self_busy_ns     per call the union of that activity, summed, ns
--   gpu_total_ns         with what the ops they enclose launched, summed, ns
--   gpu_total_busy_ns    per call the union of that activity, summed, ns
--   mean_gpu_self_busy_ns  gpu_self_busy_ns / calls (DOUBLE), ns
CREATE OR REPLACE VIEW op_stats_by_shape AS
WITH shaped AS (
  SELECT o.*,
         json_extract_string(c.args, '$."Input Dims"') AS input_dims,
         json_extract_string(c.args, '$."Input type"') AS input_types
  FROM op_calls AS o
  JOIN cpu_ops AS c
    ON c.run = o.run AND c.phase = o.phase AND c.rank = o.rank AND c.trace_id = o.trace_id
   AND c.event_index = o.event_index
  -- only ops recorded with shapes can have Input Dims: the scan keeps those before any JSON
  -- is parsed or any op call joined (none in a trace recorded without shapes)
  WHERE c.args LIKE '%"Input Dims"%'
)
SELECT run, phase, rank, name, input_dims, input_types, count(*) AS calls,
       count(CASE WHEN gpu_kernels > 0 THEN 1 END) AS gpu_calls,
       CAST(sum(coalesce(dur_ns, 0)) AS BIGINT) AS host_ns,
       CAST(sum(gpu_self_ns) AS BIGINT) AS gpu_self_ns,
       CAST(sum(gpu_self_busy_ns) AS BIGINT) AS gpu_self_busy_ns,
       CAST(sum(gpu_total_ns) AS BIGINT) AS gpu_total_ns,
       CAST(sum(gpu_total_busy_ns) AS BIGINT) AS gpu_total_busy_ns,
       CAST(sum(gpu_self_busy_ns) AS DOUBLE) / count(*) AS mean_gpu_self_busy_ns
FROM shaped
WHERE input_dims IS NOT NULL
GROUP BY run, phase, rank, name, input_dims, input_types;
