-- FLOPs and bytes moved of each call of a Triton kernel torch.compile generated
-- (triton_poi_ pointwise, triton_red_ and triton_per_ reductions), from the trace's own
-- figures: Inductor's estimate of the bytes the kernel moves (`kernel_num_gb`, 10^9 bytes)
-- and of its FLOPs (`kernel_flop`), which PyTorch writes into the call's args when
-- Inductor's profile_bandwidth or benchmark_kernel is on. A call without `kernel_num_gb` is
-- absent (its operands' shapes alone do not say how often the kernel reads them); one
-- without `kernel_flop` has NULL flops and is measured by its bytes alone.
--
-- Reads: cpu_ops, _dtypes
--
-- Columns:
--   run, phase, rank   partition
--   trace_id           the trace of the call
--   event_index        the call's cpu_op event
--   name               the kernel (triton_poi_fused_add_0, ...)
--   family             triton
--   pass               forward (a backward kernel is a kernel like any other)
--   shapes             the call's Input Dims, JSON text (NULL without them)
--   a_type             the profiler's type of the first operand
--   dtype              the first operand's peak class (see _dtypes), NULL when unknown
--   flops              kernel_flop (DOUBLE), NULL when absent
--   bytes              kernel_num_gb x 10^9 (DOUBLE)
CREATE OR REPLACE VIEW _op_triton_models AS
WITH calls AS (
  SELECT run, phase, rank, trace_id, event_index, name,
         CAST(json_extract(args, '$."Input Dims"') AS VARCHAR) AS shapes,
         json_extract_string(args, '$."Input type"[0]') AS a_type,
         TRY_CAST(json_extract_string(args, '$.kernel_flop') AS DOUBLE) AS flops,
         TRY_CAST(json_extract_string(args, '$.kernel_num_gb') AS DOUBLE) * 1e9 AS bytes
  FROM cpu_ops
  WHERE category = 'cpu_op'
    AND name LIKE 'triton%'  -- a prefix the scan filters by, before any args are parsed
    AND (name LIKE 'triton\_poi\_%' ESCAPE '\' OR name LIKE 'triton\_red\_%' ESCAPE '\'
         OR name LIKE 'triton\_per\_%' ESCAPE '\')
    AND args LIKE '%"kernel\_num\_gb"%' ESCAPE '\'
)
SELECT c.run, c.phase, c.rank, c.trace_id, c.event_index, c.name, 'triton' AS family,
       'forward' AS pass, c.shapes, c.a_type, t.dtype, c.flops, c.bytes
FROM calls AS c
LEFT JOIN _dtypes AS t ON t.input_type = c.a_type
WHERE c.bytes >= 0 AND NOT coalesce(c.flops < 0, false);
