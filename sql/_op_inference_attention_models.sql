-- FLOPs and bytes moved of each call of an inference attention operator (a batch of requests
-- of different lengths in one kernel: paged, varlen and unified attention), whose shapes
-- give the heads and head sizes but not the sequences: those come from the iteration's
-- annotation, a user_annotation on the call's thread enclosing it, named as vLLM's and
-- SGLang's detailed step annotations are:
--   execute_<tokens>_context_<requests>(sq<c_sq>sk<c_sk>sqsq<c_sqsq>sqsk<c_sqsk>)
--   _generation_<requests>(sq<g_sq>sk<g_sk>sqsq<g_sqsq>sqsk<g_sqsk>)
-- with, over the context (prefill) and generation (decode) requests, sq the query tokens,
-- sk the key/value tokens, sqsq the sum of sq^2 and sqsk the sum of sq x sk. A call without
-- such an annotation is absent. Q [tokens, Hq, d_qk], K [., Hkv, d_qk], V [., Hkv, d_v] (a
-- paged cache's pages in the first dimension: only dimensions 1 and 2 are read).
-- Formulas (TraceLens's InferenceAttention; context attention is causal within the chunk):
--   flops = Hq (d_qk + d_v) (2 c_sqsk - c_sqsq + 2 g_sqsk)
--   bytes = (c_sq + g_sq) (Hq (d_qk + d_v) + Hkv (d_qk + d_v)) x Q's size (Q, output and the
--           new tokens' K, V) + ((c_sk - c_sq) + (g_sk - g_sq)) Hkv (d_qk + d_v) x K's size
--           (the cached K, V)
--
-- Reads: cpu_ops, _dtypes
--
-- Columns:
--   run, phase, rank   partition
--   trace_id           the trace of the call
--   event_index        the call's cpu_op event
--   name               the op (aiter::mha_batch_prefill, ...)
--   family             attention
--   pass               forward
--   shapes             the call's Input Dims, JSON text
--   a_type             the profiler's type of Q
--   dtype              its peak class (see _dtypes), NULL when unknown
--   flops              floating-point operations of the call (DOUBLE)
--   bytes              bytes read and written (DOUBLE), NULL when a type is unknown
CREATE OR REPLACE VIEW _op_inference_attention_models AS
WITH specs AS (
  SELECT *
  FROM (VALUES
    ('aiter::mha_batch_prefill'),
    ('aiter::mha_varlen_fwd'),
    ('aiter::fmha_v3_varlen_fwd'),
    ('flash_attn::_flash_attn_varlen_forward'),
    ('vllm::unified_attention_with_output'),
    ('vllm::unified_attention')
  ) AS s (name)
),
calls AS (
  -- Q's type and K's (the cache's when paged); the shapes as JSON text
  SELECT o.run, o.phase, o.rank, o.trace_id, o.event_index, o.name, o.pid, o.tid, o.ts_ns,
         json_extract_string(o.args, '$."Input type"[0]') AS a_type,
         json_extract_string(o.args, '$."Input type"[1]') AS kv_type,
         CAST(json_extract(o.args, '$."Input Dims"') AS VARCHAR) AS dims
  FROM specs AS s
  JOIN cpu_ops AS o ON o.name = s.name AND o.args LIKE '%"Input Dims"%'
),
pattern AS (
  SELECT '^execute_[0-9]+_context_[0-9]+\(sq([0-9]+)sk([0-9]+)sqsq([0-9]+)sqsk([0-9]+)\)'
         || '_generation_[0-9]+\(sq([0-9]+)sk([0-9]+)sqsq([0-9]+)sqsk([0-9]+)\)' AS text
),
iterations AS (
  SELECT a.run, a.phase, a.rank, a.trace_id, a.pid, a.tid, a.ts_ns, a.dur_ns,
         CAST(TRY_CAST(regexp_extract(a.name, p.text, 1) AS BIGINT) AS DOUBLE) AS c_sq,
         CAST(TRY_CAST(regexp_extract(a.name, p.text, 2) AS BIGINT) AS DOUBLE) AS c_sk,
         CAST(TRY_CAST(regexp_extract(a.name, p.text, 3) AS BIGINT) AS DOUBLE) AS c_sqsq,
         CAST(TRY_CAST(regexp_extract(a.name, p.text, 4) AS BIGINT) AS DOUBLE) AS c_sqsk,
         CAST(TRY_CAST(regexp_extract(a.name, p.text, 5) AS BIGINT) AS DOUBLE) AS g_sq,
         CAST(TRY_CAST(regexp_extract(a.name, p.text, 6) AS BIGINT) AS DOUBLE) AS g_sk,
         CAST(TRY_CAST(regexp_extract(a.name, p.text, 8) AS BIGINT) AS DOUBLE) AS g_sqsk
  FROM cpu_ops AS a
  CROSS JOIN pattern AS p
  WHERE a.category = 'user_annotation' AND a.name LIKE 'execute\_%' ESCAPE '\'
    AND regexp_matches(a.name, p.text)
),
annotated AS (
  -- the innermost enclosing iteration annotation (the latest started)
  SELECT c.*, i.c_sq, i.c_sk, i.c_sqsq, i.c_sqsk, i.g_sq, i.g_sk, i.g_sqsk,
         row_number() OVER (PARTITION BY c.run, c.phase, c.rank, c.trace_id, c.event_index
                            ORDER BY i.ts_ns DESC) AS choice
  FROM calls AS c
  JOIN iterations AS i
    ON i.run = c.run AND i.phase = c.phase AND i.rank = c.rank AND i.trace_id = c.trace_id
   AND i.pid = c.pid AND i.tid = c.tid
   AND i.ts_ns <= c.ts_ns AND c.ts_ns < i.ts_ns + i.dur_ns
),
shaped AS (
  SELECT a.*,
         CAST(TRY_CAST(json_extract_string(dims, '$[0][1]') AS BIGINT) AS DOUBLE) AS hq,
         CAST(TRY_CAST(json_extract_string(dims, '$[0][2]') AS BIGINT) AS DOUBLE) AS d_qk,
         CAST(TRY_CAST(json_extract_string(dims, '$[1][1]') AS BIGINT) AS DOUBLE) AS hkv,
         CAST(TRY_CAST(json_extract_string(dims, '$[2][2]') AS BIGINT) AS DOUBLE) AS d_v
  FROM annotated AS a
  WHERE choice = 1
    AND json_array_length(json_extract_string(dims, '$[0]')) = 3
    AND json_array_length(json_extract_string(dims, '$[1]')) = 3
    AND json_array_length(json_extract_string(dims, '$[2]')) = 3
)
SELECT s.run, s.phase, s.rank, s.trace_id, s.event_index, s.name, 'attention' AS family,
       'forward' AS pass, s.dims AS shapes, s.a_type, tq.dtype,
       s.hq * (s.d_qk + s.d_v) * (2 * s.c_sqsk - s.c_sqsq + 2 * s.g_sqsk) AS flops,
       (s.c_sq + s.g_sq) * (s.hq + s.hkv) * (s.d_qk + s.d_v) * tq.element_bytes
       + ((s.c_sk - s.c_sq) + (s.g_sk - s.g_sq)) * s.hkv * (s.d_qk + s.d_v) * tk.element_bytes
         AS bytes
FROM shaped AS s
LEFT JOIN _dtypes AS tq ON tq.input_type = s.a_type
LEFT JOIN _dtypes AS tk ON tk.input_type = s.kv_type;
